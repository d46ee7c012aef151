// Package siteverify checks that a fan joining the waiting room passed a human check: a bot-protection layer an
// operator can require per show, so that a flash crowd's places go to people rather than to scripts that join a
// thousand times a second. The check is a third party's widget on the page (Cloudflare Turnstile, hCaptcha or
// Google reCAPTCHA v2, one per deployment); the widget hands the page a one-time token and the Verifier asks the
// provider, over its documented siteverify protocol, whether that token is good.
//
// All three speak the same protocol: a form POST of secret, response and remoteip, answered with JSON
// {"success", "challenge_ts", "hostname", "error-codes"}. The real services cannot be reached from the project's
// test machines, so the tests drive siteverifytest, a local server that speaks that protocol and serves a stand-in
// widget script.
package siteverify

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The errors Verify returns, compared with errors.Is. ErrMissing and ErrRejected are the fan's: show the widget
// again. ErrUnavailable is not: the provider could not be asked or could not answer, or refused this deployment's
// own keys, so the join is worth retrying (503) and the operator should hear of it.
var (
	ErrMissing     = errors.New("siteverify: no human check response")
	ErrRejected    = errors.New("siteverify: human check rejected")
	ErrUnavailable = errors.New("siteverify: human check unavailable")
	// ErrConfig is New's: a configuration it cannot work with.
	ErrConfig = errors.New("siteverify: invalid configuration")
)

// The providers, as Config.Provider names them.
const (
	Turnstile = "turnstile"
	HCaptcha  = "hcaptcha"
	ReCAPTCHA = "recaptcha"
)

// provider is what differs between the three: where to ask, what the page loads, and how the widget is found
// and hands its token over.
type provider struct {
	verifyURL, scriptURL string
	class, field         string
	// sendSiteKey: hCaptcha takes the site key with the token and refuses a token solved for another key.
	sendSiteKey bool
	sources     Sources
}

var providers = map[string]provider{
	Turnstile: {verifyURL: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
		scriptURL: "https://challenges.cloudflare.com/turnstile/v0/api.js",
		class:     "cf-turnstile", field: "cf-turnstile-response",
		sources: Sources{Script: []string{cloudflare}, Frame: []string{cloudflare}}},
	HCaptcha: {verifyURL: "https://api.hcaptcha.com/siteverify", scriptURL: "https://js.hcaptcha.com/1/api.js",
		class: "h-captcha", field: "h-captcha-response", sendSiteKey: true,
		sources: Sources{Script: hcaptcha, Frame: hcaptcha, Style: hcaptcha, Connect: hcaptcha}},
	ReCAPTCHA: {verifyURL: "https://www.google.com/recaptcha/api/siteverify",
		scriptURL: "https://www.google.com/recaptcha/api.js",
		class:     "g-recaptcha", field: "g-recaptcha-response",
		sources: Sources{Script: []string{"https://www.google.com/recaptcha/", "https://www.gstatic.com/recaptcha/"},
			Frame: []string{"https://www.google.com/recaptcha/", "https://recaptcha.google.com/recaptcha/"}}},
}

// The providers' origins, as their documentation asks a Content-Security-Policy to allow them.
var (
	cloudflare = "https://challenges.cloudflare.com"
	hcaptcha   = []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}
)

// Sources are the origins a page must allow in its Content-Security-Policy for the widget to work: where its
// script comes from, and the frames, stylesheets and API calls it makes.
type Sources struct {
	Script, Frame, Style, Connect []string
}

// DefaultTimeout bounds one verification. A fan's join waits on it, so a provider slower than this is treated as
// down: the fan is told to retry instead of the edge holding the connection while a crowd piles up behind it.
const DefaultTimeout = 3 * time.Second

// Config is one deployment's human check.
type Config struct {
	Provider string // Turnstile, HCaptcha or ReCAPTCHA
	SiteKey  string // public: the page renders the widget with it
	Secret   string // private: sent only to the provider, never logged
	// VerifyURL replaces the provider's siteverify address (a test server, a regional endpoint). It must be
	// https unless it is on a loopback address: the secret travels in the request body.
	VerifyURL string
	ScriptURL string // replaces the provider's widget script
	// Hostname, when set, is the site the token must have been solved on (the answer's "hostname"), so a token
	// solved on another site that borrowed this site key is refused.
	Hostname string
	Client   *http.Client  // nil: a client of the Verifier's own, which follows no redirects
	Timeout  time.Duration // zero: DefaultTimeout
}

// Verifier verifies the widget's tokens for one provider. It is safe for concurrent use; a nil *Verifier is a
// human check that is off.
type Verifier struct {
	name     string
	p        provider // with Config's overrides
	siteKey  string
	secret   string
	hostname string
	client   *http.Client
	timeout  time.Duration
}

// New returns a Verifier for c, or an error wrapping ErrConfig; no error quotes the secret.
func New(c Config) (*Verifier, error) {
	name := strings.ToLower(strings.TrimSpace(c.Provider))
	p, ok := providers[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown provider %q (want %s, %s or %s)", ErrConfig, c.Provider, Turnstile,
			HCaptcha, ReCAPTCHA)
	}
	if c.SiteKey == "" || c.Secret == "" {
		return nil, fmt.Errorf("%w: %s needs both a site key and a secret", ErrConfig, name)
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative timeout %s", ErrConfig, c.Timeout)
	}
	if c.VerifyURL != "" {
		if err := checkVerifyURL(c.VerifyURL); err != nil {
			return nil, err
		}
		p.verifyURL = c.VerifyURL
	}
	if c.ScriptURL != "" {
		if u, err := url.Parse(c.ScriptURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("%w: script URL %q is not an absolute http(s) URL", ErrConfig, c.ScriptURL)
		}
		p.scriptURL = c.ScriptURL
	}
	client := c.Client
	if client == nil {
		client = newClient()
	}
	return &Verifier{name: name, p: p, siteKey: c.SiteKey, secret: c.Secret, hostname: strings.TrimSpace(c.Hostname),
		client: client, timeout: cmp.Or(c.Timeout, DefaultTimeout)}, nil
}

// checkVerifyURL refuses an address the secret should not be sent to in clear: plain http is for loopback only
// (a test server, a local stand-in).
func checkVerifyURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: verify URL %q is not an absolute URL", ErrConfig, raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%w: verify URL %q must be https (http only on a loopback address)", ErrConfig, raw)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newClient is a client for one provider's host. Go's default transport keeps two idle connections per host, so a
// flash crowd's joins, verified many at once, would open (and handshake TLS for) a new connection for most of
// them; this one keeps enough. Redirects are not followed: siteverify does not redirect, and a 307 would resend
// the secret to wherever it pointed.
func newClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Enabled reports whether a human check is configured: false for a nil Verifier.
func (v *Verifier) Enabled() bool { return v != nil }

// Widget is what a page needs to render the provider's widget: load ScriptURL, put an element of class Class with
// data-sitekey SiteKey where the widget goes, and send the token the widget leaves in the hidden field
// ResponseField (or hands to the element's data-callback function) with the join.
type Widget struct {
	Provider      string `json:"provider"`
	SiteKey       string `json:"siteKey"`
	ScriptURL     string `json:"scriptUrl"`
	Class         string `json:"className"`
	ResponseField string `json:"responseField"`
}

// Widget describes the widget for pages; the zero Widget for a nil Verifier.
func (v *Verifier) Widget() Widget {
	if v == nil {
		return Widget{}
	}
	return Widget{Provider: v.name, SiteKey: v.siteKey, ScriptURL: v.p.scriptURL, Class: v.p.class,
		ResponseField: v.p.field}
}

// Sources are the origins the widget needs, for the page's Content-Security-Policy: the provider's, and a
// replaced script's (HUMAN_CHECK_SCRIPT_URL) own origin for its script, frames and calls (a stand-in widget, such as siteverifytest's,
// fetches its token from where it was served). None for a nil Verifier.
func (v *Verifier) Sources() Sources {
	if v == nil {
		return Sources{}
	}
	s := v.p.sources
	s = Sources{Script: slices.Clone(s.Script), Frame: slices.Clone(s.Frame), Style: slices.Clone(s.Style),
		Connect: slices.Clone(s.Connect)}
	if u, err := url.Parse(v.p.scriptURL); err == nil && u.Host != "" && v.p.scriptURL != providers[v.name].scriptURL {
		origin := u.Scheme + "://" + u.Host
		add := func(l []string) []string {
			if slices.Contains(l, origin) {
				return l
			}
			return append(l, origin)
		}
		s.Script, s.Frame, s.Connect = add(s.Script), add(s.Frame), add(s.Connect)
	}
	return s
}

// String names the provider and site key, never the secret, so a Verifier printed by mistake leaks nothing.
func (v *Verifier) String() string {
	if v == nil {
		return "human check off"
	}
	return fmt.Sprintf("%s human check (site key %s)", v.name, v.siteKey)
}

// LogValue is String's rule for slog.
func (v *Verifier) LogValue() slog.Value {
	if v == nil {
		return slog.StringValue("off")
	}
	return slog.GroupValue(slog.String("provider", v.name), slog.String("siteKey", v.siteKey),
		slog.String("verifyUrl", v.p.verifyURL))
}
