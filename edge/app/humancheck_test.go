package app

import (
	"strings"
	"testing"

	"github.com/flashseat/flashseat/waitroom/siteverify"
)

func TestLoadConfigHumanCheck(t *testing.T) {
	t.Parallel()
	const secret = "0x-human-check-secret"
	tests := []struct {
		name    string
		env     map[string]string
		want    siteverify.Widget // the zero Widget: off
		wantErr string            // a variable the error names; "" for none
	}{
		{name: "off by default"},
		{name: "turnstile", env: map[string]string{"HUMAN_CHECK": "turnstile", "HUMAN_CHECK_SITE_KEY": "site",
			"HUMAN_CHECK_SECRET": secret},
			want: siteverify.Widget{Provider: "turnstile", SiteKey: "site",
				ScriptURL: "https://challenges.cloudflare.com/turnstile/v0/api.js", Class: "cf-turnstile",
				ResponseField: "cf-turnstile-response"}},
		{name: "hcaptcha with overrides", env: map[string]string{"HUMAN_CHECK": "hcaptcha",
			"HUMAN_CHECK_SITE_KEY": "site", "HUMAN_CHECK_SECRET": secret,
			"HUMAN_CHECK_VERIFY_URL": "https://eu.hcaptcha.example/siteverify",
			"HUMAN_CHECK_SCRIPT_URL": "https://cdn.example/hcaptcha.js", "HUMAN_CHECK_HOSTNAME": "tickets.example"},
			want: siteverify.Widget{Provider: "hcaptcha", SiteKey: "site", ScriptURL: "https://cdn.example/hcaptcha.js",
				Class: "h-captcha", ResponseField: "h-captcha-response"}},
		{name: "unknown provider", wantErr: "HUMAN_CHECK", env: map[string]string{"HUMAN_CHECK": "captchaco",
			"HUMAN_CHECK_SITE_KEY": "site", "HUMAN_CHECK_SECRET": secret}},
		{name: "provider without secret", wantErr: "HUMAN_CHECK_SECRET",
			env: map[string]string{"HUMAN_CHECK": "recaptcha", "HUMAN_CHECK_SITE_KEY": "site"}},
		{name: "provider without site key", wantErr: "HUMAN_CHECK_SITE_KEY",
			env: map[string]string{"HUMAN_CHECK": "recaptcha", "HUMAN_CHECK_SECRET": secret}},
		{name: "keys without provider", wantErr: "HUMAN_CHECK",
			env: map[string]string{"HUMAN_CHECK_SITE_KEY": "site", "HUMAN_CHECK_SECRET": secret}},
		{name: "secret sent in clear", wantErr: "HUMAN_CHECK", env: map[string]string{"HUMAN_CHECK": "turnstile",
			"HUMAN_CHECK_SITE_KEY": "site", "HUMAN_CHECK_SECRET": secret,
			"HUMAN_CHECK_VERIFY_URL": "http://captcha.example/siteverify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadConfig(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error %q quotes the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.HumanCheck.Widget(); got != tt.want {
				t.Errorf("widget: got %+v, want %+v", got, tt.want)
			}
			if got, want := cfg.HumanCheck.Enabled(), tt.want != (siteverify.Widget{}); got != want {
				t.Errorf("Enabled: got %v, want %v", got, want)
			}
		})
	}
}
