package siteverify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/waitroom/siteverify"
)

const secret = "s3cret-never-logged"

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	good := siteverify.Config{Provider: siteverify.Turnstile, SiteKey: "site", Secret: secret}
	tests := []struct {
		name   string
		change func(c *siteverify.Config)
	}{
		{"unknown provider", func(c *siteverify.Config) { c.Provider = "captchaco" }},
		{"no provider", func(c *siteverify.Config) { c.Provider = "" }},
		{"no site key", func(c *siteverify.Config) { c.SiteKey = "" }},
		{"no secret", func(c *siteverify.Config) { c.Secret = "" }},
		{"plain http verify URL", func(c *siteverify.Config) { c.VerifyURL = "http://captcha.example/siteverify" }},
		{"relative verify URL", func(c *siteverify.Config) { c.VerifyURL = "/siteverify" }},
		{"relative script URL", func(c *siteverify.Config) { c.ScriptURL = "/api.js" }},
		{"script URL of another scheme", func(c *siteverify.Config) { c.ScriptURL = "javascript:alert(1)" }},
		{"negative timeout", func(c *siteverify.Config) { c.Timeout = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := good
			tt.change(&c)
			v, err := siteverify.New(c)
			if !errors.Is(err, siteverify.ErrConfig) {
				t.Fatalf("got %v, %v; want ErrConfig", v, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error %q quotes the secret", err)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    siteverify.Config
	}{
		{"provider in capitals", siteverify.Config{Provider: " Turnstile ", SiteKey: "k", Secret: secret}},
		{"https verify URL", siteverify.Config{Provider: "hcaptcha", SiteKey: "k", Secret: secret,
			VerifyURL: "https://eu.hcaptcha.example/siteverify"}},
		{"loopback http verify URL", siteverify.Config{Provider: "recaptcha", SiteKey: "k", Secret: secret,
			VerifyURL: "http://[::1]:8999/siteverify", ScriptURL: "http://127.0.0.1:8999/api.js"}},
		{"localhost http verify URL", siteverify.Config{Provider: "recaptcha", SiteKey: "k", Secret: secret,
			VerifyURL: "http://localhost:8999/siteverify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := siteverify.New(tt.c)
			if err != nil || !v.Enabled() {
				t.Fatalf("got %v, %v; want an enabled Verifier", v, err)
			}
		})
	}
}

func TestWidget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		want     siteverify.Widget
	}{
		{siteverify.Turnstile, siteverify.Widget{Provider: "turnstile", SiteKey: "k",
			ScriptURL: "https://challenges.cloudflare.com/turnstile/v0/api.js", Class: "cf-turnstile",
			ResponseField: "cf-turnstile-response"}},
		{siteverify.HCaptcha, siteverify.Widget{Provider: "hcaptcha", SiteKey: "k",
			ScriptURL: "https://js.hcaptcha.com/1/api.js", Class: "h-captcha", ResponseField: "h-captcha-response"}},
		{siteverify.ReCAPTCHA, siteverify.Widget{Provider: "recaptcha", SiteKey: "k",
			ScriptURL: "https://www.google.com/recaptcha/api.js", Class: "g-recaptcha",
			ResponseField: "g-recaptcha-response"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			v, err := siteverify.New(siteverify.Config{Provider: tt.provider, SiteKey: "k", Secret: secret})
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Widget(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			over, _ := siteverify.New(siteverify.Config{Provider: tt.provider, SiteKey: "k", Secret: secret,
				ScriptURL: "https://cdn.example/api.js"})
			if got := over.Widget().ScriptURL; got != "https://cdn.example/api.js" {
				t.Errorf("overridden script URL: got %q, want the override", got)
			}
		})
	}
}

func TestWidgetJSON(t *testing.T) {
	t.Parallel()
	v, err := siteverify.New(siteverify.Config{Provider: siteverify.HCaptcha, SiteKey: "k", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v.Widget())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"provider":"hcaptcha","siteKey":"k","scriptUrl":"https://js.hcaptcha.com/1/api.js",` +
		`"className":"h-captcha","responseField":"h-captcha-response"}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

// Sources are what the page's Content-Security-Policy must allow: the provider's documented origins, and a
// replaced script's own origin for its script, frames and calls (the stand-in widget fetches its token there).
func TestSources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		script   string // HUMAN_CHECK_SCRIPT_URL
		want     siteverify.Sources
	}{
		{"turnstile", siteverify.Turnstile, "", siteverify.Sources{Script: []string{"https://challenges.cloudflare.com"},
			Frame: []string{"https://challenges.cloudflare.com"}}},
		{"hcaptcha", siteverify.HCaptcha, "", siteverify.Sources{
			Script:  []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
			Frame:   []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
			Style:   []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
			Connect: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}}},
		{"recaptcha", siteverify.ReCAPTCHA, "", siteverify.Sources{
			Script: []string{"https://www.google.com/recaptcha/", "https://www.gstatic.com/recaptcha/"},
			Frame:  []string{"https://www.google.com/recaptcha/", "https://recaptcha.google.com/recaptcha/"}}},
		{"a stand-in widget", siteverify.Turnstile, "http://127.0.0.1:8123/api.js", siteverify.Sources{
			Script:  []string{"https://challenges.cloudflare.com", "http://127.0.0.1:8123"},
			Frame:   []string{"https://challenges.cloudflare.com", "http://127.0.0.1:8123"},
			Connect: []string{"http://127.0.0.1:8123"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := siteverify.New(siteverify.Config{Provider: tt.provider, SiteKey: "k", Secret: secret,
				ScriptURL: tt.script})
			if err != nil {
				t.Fatal(err)
			}
			got := v.Sources()
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			// The provider's list is not the caller's to change.
			got.Script[0] = "https://evil.example"
			if again := v.Sources(); again.Script[0] == "https://evil.example" {
				t.Error("Sources shares its slices with the provider's table")
			}
		})
	}
	var off *siteverify.Verifier
	if got := off.Sources(); fmt.Sprint(got) != fmt.Sprint(siteverify.Sources{}) {
		t.Errorf("a nil Verifier: got %+v, want none", got)
	}
}

// A nil Verifier is a human check that is off: it says so, describes no widget, and verifies nothing, so a caller
// that forgets to ask fails closed.
func TestNilVerifier(t *testing.T) {
	t.Parallel()
	var v *siteverify.Verifier
	if v.Enabled() {
		t.Error("Enabled: got true, want false")
	}
	if got := v.Widget(); got != (siteverify.Widget{}) {
		t.Errorf("Widget: got %+v, want the zero Widget", got)
	}
	if err := v.Verify(context.Background(), "token", ""); !errors.Is(err, siteverify.ErrUnavailable) {
		t.Errorf("Verify: got %v, want ErrUnavailable", err)
	}
}

// A Verifier printed or logged by mistake shows its provider and site key, never its secret.
func TestVerifierNeverShowsSecret(t *testing.T) {
	t.Parallel()
	v, err := siteverify.New(siteverify.Config{Provider: siteverify.Turnstile, SiteKey: "public-key", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "humanCheck", v)
	for name, got := range map[string]string{
		"%v": fmt.Sprintf("%v", v), "%+v": fmt.Sprintf("%+v", v), "%s": fmt.Sprintf("%s", v),
		"struct %+v": fmt.Sprintf("%+v", struct{ V *siteverify.Verifier }{v}), "slog": logged.String(),
	} {
		if strings.Contains(got, secret) || !strings.Contains(got, "public-key") {
			t.Errorf("%s: got %q, want the site key and not the secret", name, got)
		}
	}
}
