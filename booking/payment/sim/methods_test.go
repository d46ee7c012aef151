package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/payment/stripe"
)

const pk = "pk_test_simtest"

// tokenize posts a card form to /v1/payment_methods as Stripe.js would, from a page on another origin.
func tokenize(t *testing.T, base, key string, form url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/payment_methods", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://shop.example")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return resp.StatusCode, resp.Header, body
}

func card(number string) url.Values {
	return url.Values{"type": {"card"}, "card[number]": {number}, "card[exp_month]": {"12"},
		"card[exp_year]": {"34"}, "card[cvc]": {"123"}, "billing_details[name]": {"Asha Rao"}}
}

func startSim(t *testing.T, cfg sim.Config) (*sim.Server, string, *stripe.Client) {
	t.Helper()
	s := sim.New(cfg, nil)
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); srv.Close() })
	c, err := stripe.New(stripe.Config{BaseURL: srv.URL, SecretKey: "sk_test_sim", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv.URL, c
}

func TestTokenizeCard(t *testing.T) {
	_, base, _ := startSim(t, sim.Config{PublishableKey: pk})
	status, header, body := tokenize(t, base, pk, card("4242 4242 4242 4242"))
	if status != http.StatusOK || header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("tokenize: %d, CORS %q, %v", status, header.Get("Access-Control-Allow-Origin"), body)
	}
	id, _ := body["id"].(string)
	c, _ := body["card"].(map[string]any)
	if !strings.HasPrefix(id, "pm_") || body["object"] != "payment_method" || c["brand"] != "visa" || c["last4"] != "4242" ||
		c["exp_month"] != 12.0 || c["exp_year"] != 2034.0 {
		t.Fatalf("payment method = %v", body)
	}
	if strings.Contains(strings.ReplaceAll(mustJSON(body), " ", ""), "4242424242424242") {
		t.Fatalf("the answer repeats the card number: %v", body)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestTokenizeRefusals(t *testing.T) {
	_, base, _ := startSim(t, sim.Config{PublishableKey: pk})
	with := func(k, v string) url.Values { f := card("4242424242424242"); f.Set(k, v); return f }
	tests := []struct {
		name       string
		key        string
		form       url.Values
		wantStatus int
		wantType   string
		wantCode   string
		wantParam  string
	}{
		{"no key", "", card("4242424242424242"), 401, "invalid_request_error", "", ""},
		{"other publishable key", "pk_test_other", card("4242424242424242"), 401, "invalid_request_error", "", ""},
		{"wrong type", pk, with("type", "sepa_debit"), 400, "invalid_request_error", "parameter_invalid", "type"},
		{"no number", pk, with("card[number]", ""), 400, "invalid_request_error", "parameter_missing", "card[number]"},
		{"bad check digit", pk, with("card[number]", "4242424242424241"), 402, "card_error", "incorrect_number", "card[number]"},
		{"letters", pk, with("card[number]", "4242abcd42424242"), 402, "card_error", "incorrect_number", "card[number]"},
		{"month 13", pk, with("card[exp_month]", "13"), 402, "card_error", "invalid_expiry_month", "card[exp_month]"},
		{"expired", pk, with("card[exp_year]", "2001"), 402, "card_error", "invalid_expiry_year", "card[exp_year]"},
		{"short cvc", pk, with("card[cvc]", "12"), 402, "card_error", "invalid_cvc", "card[cvc]"},
		{"real card", pk, with("card[number]", "4111111111111111"), 402, "card_error", "card_declined", "card[number]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, header, body := tokenize(t, base, tt.key, tt.form)
			e, _ := body["error"].(map[string]any)
			if status != tt.wantStatus || e["type"] != tt.wantType || (tt.wantCode != "" && e["code"] != tt.wantCode) ||
				(tt.wantParam != "" && e["param"] != tt.wantParam) || e["message"] == "" {
				t.Fatalf("got %d %v, want %d %s %s %s", status, body, tt.wantStatus, tt.wantType, tt.wantCode, tt.wantParam)
			}
			if header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("an error without CORS headers is unreadable to the page")
			}
		})
	}
}

func TestTokenizePreflight(t *testing.T) {
	_, base, _ := startSim(t, sim.Config{})
	req, _ := http.NewRequest(http.MethodOptions, base+"/v1/payment_methods", nil)
	req.Header.Set("Origin", "http://shop.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	// Without a configured publishable key, any pk_ key tokenizes; a secret key may too, as at Stripe. But a
	// publishable key never reaches the secret API.
	if status, _, _ := tokenize(t, base, "pk_test_any", card("4242424242424242")); status != http.StatusOK {
		t.Fatalf("any pk_ key: %d", status)
	}
	c, _ := stripe.New(stripe.Config{BaseURL: base, SecretKey: "pk_test_any"})
	if _, err := c.Retrieve(context.Background(), "pi_x"); !errors.Is(err, payment.ErrAuth) {
		t.Fatalf("publishable key on the secret API: %v, want ErrAuth", err)
	}
}

// TestTestCards tokenizes each of Stripe's test cards and confirms a payment with it.
func TestTestCards(t *testing.T) {
	_, base, c := startSim(t, sim.Config{PublishableKey: pk, SlowDelay: time.Second})
	tests := []struct {
		number     string
		wantErr    error
		wantStatus payment.Status
	}{
		{"4242424242424242", nil, payment.StatusRequiresCapture},
		{"5555555555554444", nil, payment.StatusRequiresCapture},
		{"4000000000000002", payment.ErrDeclined, payment.StatusRequiresPaymentMethod},
		{"4000000000009995", payment.ErrDeclined, payment.StatusRequiresPaymentMethod},
		{"4000000000003220", nil, payment.StatusRequiresAction},
		{"4000000000000259", payment.ErrTimeout, ""}, // past the client's 300ms: the outcome comes later
	}
	for _, tt := range tests {
		t.Run(tt.number, func(t *testing.T) {
			status, _, body := tokenize(t, base, pk, card(tt.number))
			if status != http.StatusOK {
				t.Fatalf("tokenize: %d %v", status, body)
			}
			p := params(body["id"].(string), "a-"+tt.number)
			p.ReturnURL = "http://shop.example/bookings/bk1"
			in, err := c.Authorize(context.Background(), p)
			if !errors.Is(err, tt.wantErr) || in.Status != tt.wantStatus {
				t.Fatalf("Authorize = %q, %v; want %q, %v", in.Status, err, tt.wantStatus, tt.wantErr)
			}
			if in.RequiresAction() && !strings.HasPrefix(in.NextActionURL, base+sim.ChallengePath+in.ID+"?challenge=") {
				t.Fatalf("next action URL %q", in.NextActionURL)
			}
		})
	}
	t.Run("slow card resolves", func(t *testing.T) {
		status, _, body := tokenize(t, base, pk, card("4000000000000259"))
		if status != http.StatusOK {
			t.Fatal(status)
		}
		p := params(body["id"].(string), "a-slow")
		if _, err := c.Authorize(context.Background(), p); !errors.Is(err, payment.ErrTimeout) {
			t.Fatalf("first: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			in, err := c.Authorize(context.Background(), p)
			if err == nil && in.Authorized() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("slow card never authorized: %v %v", in.Status, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// TestChallenge walks the 3-D Secure page as a browser does: it has real buttons, passing authorizes the intent,
// failing fails it, each sends its webhook and redirects to the return URL; the page is refused without its secret.
func TestChallenge(t *testing.T) {
	rc := newReceiver(t)
	s, _, c := startSim(t, sim.Config{WebhookURL: rc.srv.URL, WebhookSecret: secret})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		result     string
		wantStatus payment.Status
		wantEvent  string
		wantRedir  string
	}{
		{"complete", payment.StatusRequiresCapture, payment.EventAuthorized, "succeeded"},
		{"fail", payment.StatusRequiresPaymentMethod, payment.EventFailed, "failed"},
	} {
		t.Run(tt.result, func(t *testing.T) {
			p := params(sim.Card3DS, "a-"+tt.result)
			p.ReturnURL = "http://shop.example/bookings/bk1?from=3ds"
			in, err := c.Authorize(context.Background(), p)
			if err != nil || !in.RequiresAction() {
				t.Fatalf("Authorize: %v %v", in.Status, err)
			}
			resp, err := http.Get(in.NextActionURL)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`<button class="ok" type="submit" name="result" value="complete">Complete authentication</button>`,
				`value="fail">Fail authentication</button>`, "450.00 INR"} {
				if !strings.Contains(string(page), want) {
					t.Fatalf("challenge page lacks %q:\n%s", want, page)
				}
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://shop.example") {
				t.Fatalf("CSP %q does not let the form's redirect go back to the shop", csp)
			}
			u, _ := url.Parse(in.NextActionURL)
			action := u.Scheme + "://" + u.Host + u.Path
			// The secret is what authorizes an answer.
			if r, _ := noRedirect.PostForm(action, url.Values{"challenge": {"chl_forged"}, "result": {tt.result}}); r.StatusCode != http.StatusNotFound {
				t.Fatalf("forged challenge: %d", r.StatusCode)
			}
			r, err := noRedirect.PostForm(action, url.Values{"challenge": {u.Query().Get("challenge")}, "result": {tt.result}})
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			loc, _ := url.Parse(r.Header.Get("Location"))
			if r.StatusCode != http.StatusSeeOther || loc.Host != "shop.example" || loc.Path != "/bookings/bk1" ||
				loc.Query().Get("redirect_status") != tt.wantRedir || loc.Query().Get("payment_intent") != in.ID ||
				loc.Query().Get("from") != "3ds" {
				t.Fatalf("answer: %d to %q", r.StatusCode, r.Header.Get("Location"))
			}
			rc.waitFor(t, tt.wantEvent, in.ID)
			got, err := c.Retrieve(context.Background(), in.ID)
			if err != nil || got.Status != tt.wantStatus || got.NextActionURL != "" {
				t.Fatalf("after %s: %+v %v, want %s", tt.result, got, err, tt.wantStatus)
			}
			// A second answer (another tab) changes nothing.
			again, _ := noRedirect.PostForm(action, url.Values{"challenge": {u.Query().Get("challenge")}, "result": {"complete"}})
			if again.StatusCode != http.StatusConflict {
				t.Fatalf("second answer: %d", again.StatusCode)
			}
			if cur, _ := s.Intent(in.ID); cur.Status != tt.wantStatus {
				t.Fatalf("second answer moved the intent to %s", cur.Status)
			}
		})
	}
}
