package app_test

import (
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

// TestAdminRefund: an operator refunds any fan's confirmed booking through the same saga as the fan's own refund
// (seats back on sale, money back at the gateway), the change is in the audit log with the operator's name, and
// bad refunds are 4xx problems.
func TestAdminRefund(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	b := st.hold(fan, show, "A5", "A6")
	if p := st.pay(fan, b, sim.CardOK, "k1"); p.status != 200 {
		t.Fatalf("pay: %d %s", p.status, p.body)
	}
	held := st.hold(fan, show, "A7")

	st.do("POST", "/admin/v1/bookings/"+b+"/refund", fan, nil).problem(t, 403)
	st.do("POST", "/admin/v1/bookings/"+b+"/refund", "", nil).problem(t, 401)
	st.do("POST", "/admin/v1/bookings/bk_nope/refund", adminToken, nil).problem(t, 404)
	st.do("POST", "/admin/v1/bookings/"+held+"/refund", adminToken, nil).problem(t, 409)

	r := st.do("POST", "/admin/v1/bookings/"+b+"/refund", adminToken, nil, "X-Operator", "console:Meera")
	if r.status != 200 || r.json(t)["status"] != "REFUNDED" {
		t.Fatalf("admin refund: %d %s", r.status, r.body)
	}
	st.waitStatus(fan, b, "REFUNDED")
	st.hold(st.guest(), show, "A5", "A6") // the seats are on sale again
	if again := st.do("POST", "/admin/v1/bookings/"+b+"/refund", adminToken, nil); again.status != 200 {
		t.Fatalf("refund again: %d %s", again.status, again.body)
	}
	a := st.do("GET", "/admin/v1/audit?showId="+show, adminToken, nil)
	if a.status != 200 || strings.Count(string(a.body), `"action":"booking.refund"`) != 1 ||
		!strings.Contains(string(a.body), `"actor":"console:Meera"`) {
		t.Fatalf("audit: %d %s", a.status, a.body)
	}
}
