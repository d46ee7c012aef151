package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

// TestResaleOverHTTP: the exchange as a fan and an operator reach it: the policy on the show (bad values 422),
// listing closed (409 resale-closed) and above the cap (422 price-above-cap), the public listings, a buyer's
// HELD booking paid with /pay, the seller's old code refused (409 ticket-resold) and their payout on their booking.
func TestResaleOverHTTP(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show() // GOLD at 45,000
	seller, buyer := st.guest(), st.guest()
	sb, tickets := st.paidTickets(seller, show, "A1", "A2")
	tk := tickets["A1"]
	resale := "/api/v1/tickets/" + tk["ticketId"].(string) + "/resale"

	if p := st.do("POST", resale, seller, map[string]any{"price": 30000}).problem(t, 409); !strings.HasSuffix(p.Type, "/resale-closed") {
		t.Fatalf("listing with resale off: %+v", p)
	}
	for _, bad := range []string{`{"resalePolicy":{"maxPriceRatio":0}}`, `{"resalePolicy":{"maxPriceRatio":1.5}}`,
		`{"resalePolicy":{"feePercent":100}}`, `{"resalePolicy":{"feePercent":-1}}`, `{"resalePolicy":{"enabld":true}}`} {
		st.do("PUT", "/admin/v1/shows/"+show, adminToken, bad).problem(t, 422)
	}
	put := st.do("PUT", "/admin/v1/shows/"+show, adminToken, `{"resalePolicy":{"enabled":true,"maxPriceRatio":0.8,"feePercent":10}}`)
	if put.status != 200 {
		t.Fatalf("put policy: %d %s", put.status, put.body)
	}
	got := st.do("GET", "/admin/v1/shows/"+show, adminToken, nil)
	rp, _ := got.json(t)["resalePolicy"].(map[string]any)
	if rp["enabled"] != true || rp["maxPriceRatio"] != 0.8 || rp["feePercent"] != 10.0 {
		t.Fatalf("GET resalePolicy %v (%s)", rp, got.body)
	}

	if p := st.do("POST", resale, seller, map[string]any{"price": 36001}).problem(t, 422); !strings.HasSuffix(p.Type, "/price-above-cap") {
		t.Fatalf("listing above the cap: %+v", p)
	}
	st.do("POST", resale, seller, map[string]any{}).problem(t, 422)
	st.do("POST", resale, buyer, map[string]any{"price": 100}).problem(t, 404)
	l := st.do("POST", resale, seller, map[string]any{"price": 36000})
	if l.status != 201 || l.json(t)["status"] != "LISTED" || l.json(t)["price"] != 36000.0 {
		t.Fatalf("list: %d %s", l.status, l.body)
	}
	listing := l.json(t)["listingId"].(string)
	if p := st.do("POST", resale, seller, map[string]any{"price": 30000}).problem(t, 409); !strings.HasSuffix(p.Type, "/ticket-listed") {
		t.Fatalf("listing twice: %+v", p)
	}
	pub := st.do("GET", "/api/v1/shows/"+show+"/resale", "", nil)
	ls, _ := pub.json(t)["listings"].([]any)
	if pub.status != 200 || len(ls) != 1 || ls[0].(map[string]any)["listingId"] != listing || ls[0].(map[string]any)["category"] != "GOLD" {
		t.Fatalf("public listings: %d %s", pub.status, pub.body)
	}

	h := st.do("POST", "/api/v1/resale/"+listing+"/buy", buyer, nil)
	if h.status != 201 || h.json(t)["status"] != "HELD" || h.json(t)["totalAmount"] != 36000.0 {
		t.Fatalf("buy: %d %s", h.status, h.body)
	}
	if p := st.do("POST", "/api/v1/resale/"+listing+"/buy", st.guest(), nil).problem(t, 409); !strings.HasSuffix(p.Type, "/seats-unavailable") {
		t.Fatalf("a second buyer: %+v", p)
	}
	st.do("POST", "/api/v1/resale/rs_nope/buy", buyer, nil).problem(t, 404)
	bb := h.json(t)["bookingId"].(string)
	if p := st.pay(buyer, bb, sim.CardOK, "k-buy"); p.status != 200 {
		t.Fatalf("pay: %d %s", p.status, p.body)
	}
	view := st.waitStatus(buyer, bb, "CONFIRMED")
	newCode := view["tickets"].([]any)[0].(map[string]any)["code"].(string)
	if newCode == tk["code"] {
		t.Fatal("the buyer's ticket carries the seller's code")
	}
	if p := st.do("POST", "/api/v1/checkin", staffToken, map[string]any{"code": tk["code"]}).problem(t, 409); !strings.HasSuffix(p.Type, "/ticket-resold") {
		t.Fatalf("the seller's old code: %+v", p)
	}
	if c := st.do("POST", "/api/v1/checkin", staffToken, map[string]any{"code": newCode}); c.status != 200 {
		t.Fatalf("the buyer's code: %d %s", c.status, c.body)
	}
	var payouts []any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v := st.do("GET", "/api/v1/bookings/"+sb, seller, nil).json(t)
		if payouts, _ = v["payouts"].([]any); len(payouts) == 1 && payouts[0].(map[string]any)["status"] == "SUCCEEDED" {
			break
		}
	}
	if len(payouts) != 1 || payouts[0].(map[string]any)["amount"] != 32400.0 || payouts[0].(map[string]any)["listingId"] != listing {
		t.Fatalf("the seller's payouts %v, want 36,000 less 10%%", payouts)
	}
	// Withdraw: the other ticket listed and taken back admits again.
	other := "/api/v1/tickets/" + tickets["A2"]["ticketId"].(string) + "/resale"
	if l := st.do("POST", other, seller, map[string]any{"price": 20000}); l.status != 201 {
		t.Fatalf("list A2: %d %s", l.status, l.body)
	}
	if w := st.do("DELETE", other, seller, nil); w.status != 200 || w.json(t)["status"] != "WITHDRAWN" {
		t.Fatalf("withdraw: %d %s", w.status, w.body)
	}
	st.do("DELETE", other, seller, nil).problem(t, 404)
	if c := st.do("POST", "/api/v1/checkin", staffToken, map[string]any{"code": tickets["A2"]["code"]}); c.status != 200 {
		t.Fatalf("check-in after the withdrawal: %d %s", c.status, c.body)
	}
	st.checkInvariants()
}
