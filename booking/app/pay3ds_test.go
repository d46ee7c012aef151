package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

// TestPay3DSOverHTTP is the browser's payment path as booking serves it, with the simulator as gateway: the
// public gateway config, a card tokenized at the simulator (never sent to booking), a 202 with Stripe's
// redirect_to_url for the 3-D Secure card, the challenge passed, the webhook confirming the booking, and the
// fan's list of bookings. returnUrl must be a path on the site.
func TestPay3DSOverHTTP(t *testing.T) {
	t.Parallel()
	st := newStack(t, "PAYMENT_PUBLISHABLE_KEY", "pk_test_app")
	cfg := st.do("GET", "/api/v1/payments/config", "", nil)
	if cfg.status != 200 {
		t.Fatalf("payments config: %d %s", cfg.status, cfg.body)
	}
	gw := cfg.json(t)
	if gw["provider"] != "sim" || gw["publishableKey"] != "pk_test_app" || gw["apiBase"] != st.env["PAYMENT_GATEWAY_URL"] {
		t.Fatalf("payments config = %v", gw)
	}
	form := url.Values{"type": {"card"}, "card[number]": {"4000 0000 0000 3220"}, "card[exp_month]": {"12"},
		"card[exp_year]": {"2040"}, "card[cvc]": {"123"}}
	req, _ := http.NewRequest("POST", gw["apiBase"].(string)+"/v1/payment_methods", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer pk_test_app")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var pm struct{ ID string }
	decodeJSON(t, resp, &pm)

	tok, show := st.guest(), st.show()
	id := st.hold(tok, show, "A1")
	for i, bad := range []string{"https://evil.example/x", "//evil.example/x", "/\\evil.example", "bookings/x",
		"javascript:alert(1)", "/bookings/x\r\nSet-Cookie: a=b"} {
		r := st.do("POST", "/api/v1/bookings/"+id+"/pay", tok, map[string]string{"paymentMethod": pm.ID, "returnUrl": bad},
			"Idempotency-Key", fmt.Sprint("bad-", i))
		r.problem(t, 422)
	}
	r := st.do("POST", "/api/v1/bookings/"+id+"/pay", tok, map[string]string{"paymentMethod": pm.ID,
		"returnUrl": "/bookings/" + id + "?from=checkout"}, "Idempotency-Key", "k1", "Origin", "http://fans.example:8080")
	if r.status != 202 {
		t.Fatalf("3-D Secure pay: %d %s", r.status, r.body)
	}
	body := r.json(t)
	next, _ := body["nextAction"].(map[string]any)
	if body["status"] != "PAYMENT_PENDING" || body["bookingId"] != id || body["paymentId"] == "" || next["type"] != "redirect_to_url" ||
		!strings.HasPrefix(next["url"].(string), gw["apiBase"].(string)+sim.ChallengePath) {
		t.Fatalf("202 = %s", r.body)
	}
	if g := st.do("GET", "/api/v1/bookings/"+id, tok, nil); !strings.Contains(string(g.body), `"nextAction":{"type":"redirect_to_url","url":`) {
		t.Fatalf("the pending booking does not lead back to its challenge: %s", g.body)
	}
	u, _ := url.Parse(next["url"].(string))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	done, err := noRedirect.PostForm(u.Scheme+"://"+u.Host+u.Path, url.Values{"challenge": {u.Query().Get("challenge")},
		"result": {"complete"}})
	if err != nil {
		t.Fatal(err)
	}
	done.Body.Close()
	if loc := done.Header.Get("Location"); !strings.HasPrefix(loc, "http://fans.example:8080/bookings/"+id+"?") {
		t.Fatalf("the challenge sends the browser to %q, want the site's booking page", loc)
	}
	b := st.waitStatus(tok, id, "CONFIRMED")
	if tks, _ := b["tickets"].([]any); len(tks) != 1 {
		t.Fatalf("confirmed booking = %v", b)
	}
	if sh, _ := b["show"].(map[string]any); sh["title"] != "T" || sh["venue"] != "Hall" || b["refundableUntil"] == nil {
		t.Fatalf("booking detail = %v", b)
	}
	if seats, _ := b["seats"].([]any); len(seats) != 1 || seats[0].(map[string]any)["category"] != "GOLD" {
		t.Fatalf("booking seats = %v", b["seats"])
	}

	second := st.hold(tok, show, "A2")
	list := st.do("GET", "/api/v1/bookings", tok, nil)
	var mine struct {
		Bookings []struct{ BookingID, Status string }
	}
	if list.status != 200 || decodeBody(t, list.body, &mine) != nil || len(mine.Bookings) != 2 ||
		mine.Bookings[0].BookingID != second || mine.Bookings[1].BookingID != id || mine.Bookings[1].Status != "CONFIRMED" {
		t.Fatalf("my bookings: %d %s", list.status, list.body)
	}
	if other := st.do("GET", "/api/v1/bookings", st.guest(), nil); other.status != 200 || !strings.Contains(string(other.body), `"bookings":[]`) {
		t.Fatalf("another fan's list: %d %s", other.status, other.body)
	}
	st.do("GET", "/api/v1/bookings", "", nil).problem(t, 401)
	st.checkInvariants()
}

func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || decodeBody(t, b, v) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func decodeBody(t *testing.T, b []byte, v any) error {
	t.Helper()
	return json.Unmarshal(b, v)
}
