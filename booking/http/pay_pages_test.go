package http_test

import (
	"strings"
	"testing"

	bookinghttp "github.com/flashseat/flashseat/booking/http"
)

// TestPaymentPagesServe checks the checkout, booking and "My bookings" pages as HTML: the card form's labelled
// fields with their autocomplete tokens and no names (so nothing is ever submitted by the browser itself), a Pay
// button, and a Content-Security-Policy that lets the page reach the gateway it is configured with, and only it.
func TestPaymentPagesServe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		gw       bookinghttp.PublicGateway
		csp, not []string
	}{
		{"simulator", bookinghttp.PublicGateway{Provider: "sim", PublishableKey: "pk_test_x", APIBase: "http://pay.example:8082"},
			[]string{"connect-src 'self' http://pay.example:8082;", "script-src 'self';", "frame-src 'self';"}, []string{"stripe.com"}},
		{"stripe", bookinghttp.PublicGateway{Provider: "stripe", PublishableKey: "pk_live_x", APIBase: "https://api.stripe.com"},
			[]string{"script-src 'self' https://js.stripe.com;", "frame-src 'self' https://js.stripe.com https://hooks.stripe.com;",
				"connect-src 'self' https://api.stripe.com"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, newEnv(t), func(c *bookinghttp.Config) { c.Gateway = tc.gw })
			r := h.do("GET", "/checkout/bk_123", "", "", "Accept", "text/html")
			body, csp := string(r.body), r.header.Get("Content-Security-Policy")
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				t.Fatalf("checkout: %d %s", r.status, r.header.Get("Content-Type"))
			}
			for _, want := range tc.csp {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(csp, not) {
					t.Errorf("CSP %q allows %q", csp, not)
				}
			}
			for _, want := range []string{`data-booking="bk_123"`, `data-provider="` + tc.gw.Provider + `"`,
				`data-key="` + tc.gw.PublishableKey + `"`, `<label for="cc-number">`, `id="cc-number" autocomplete="cc-number"`,
				`autocomplete="cc-name"`, `autocomplete="cc-exp"`, `autocomplete="cc-csc"`, `type="submit" class="primary">Pay</button>`,
				`role="alert"`, "checkout.js"} {
				if !strings.Contains(body, want) {
					t.Errorf("checkout page lacks %q", want)
				}
			}
			if strings.Contains(body, `name="cc`) || strings.Contains(body, `name="card`) {
				t.Error("a card field has a name: a form submitted without the script would send it")
			}
		})
	}
	h := newHarness(t, newEnv(t))
	for path, want := range map[string]string{"/bookings/bk_123": `data-booking="bk_123"`, "/bookings": "My bookings",
		"/transfers/tr_123": `data-transfer="tr_123"`} {
		r := h.do("GET", path, "", "", "Accept", "text/html")
		if r.status != 200 || !strings.Contains(string(r.body), want) || !strings.Contains(string(r.body), `role="alert"`) {
			t.Errorf("%s: %d, lacks %q", path, r.status, want)
		}
	}
	for _, path := range []string{"/checkout/not%20an%20id", "/transfers/not%20an%20id"} {
		if r := h.do("GET", path, "", "", "Accept", "text/html"); r.status != 404 {
			t.Errorf("%s: %d, want 404", path, r.status)
		}
	}
}
