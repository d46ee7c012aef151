package http

import "testing"

// TestPageCSP: with a human check configured, the page's policy lets in exactly its widget's origins, each in its
// own directive; without one, nothing but the page's own files.
func TestPageCSP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  PageSources
		want string
	}{
		{"no human check", PageSources{}, "default-src 'self'; script-src 'self'; style-src 'self'; " +
			"img-src 'self' data:; connect-src 'self'; frame-src 'none'; worker-src 'self'; object-src 'none'; " +
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
		{"hCaptcha", PageSources{Script: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
			Frame: []string{"https://hcaptcha.com"}, Style: []string{"https://hcaptcha.com"},
			Connect: []string{"https://*.hcaptcha.com"}},
			"default-src 'self'; script-src 'self' https://hcaptcha.com https://*.hcaptcha.com; " +
				"style-src 'self' https://hcaptcha.com; img-src 'self' data:; connect-src 'self' https://*.hcaptcha.com; " +
				"frame-src https://hcaptcha.com; worker-src 'self'; object-src 'none'; form-action 'self'; " +
				"frame-ancestors 'none'; base-uri 'none'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := pageCSP(tt.src); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
