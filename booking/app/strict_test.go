package app_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

// TestOperatorWritesRefuseUnknownFields: every operator write with a misspelt or unknown member, at the top or
// nested, is a 422 problem naming the member by its path, and changes nothing (encoding/json alone would skip
// the member and answer 200).
func TestOperatorWritesRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	b := st.hold(fan, show, "A1", "A2")
	if p := st.pay(fan, b, sim.CardOK, "k1"); p.status != 200 {
		t.Fatalf("pay: %d %s", p.status, p.body)
	}
	wh := st.do("POST", "/admin/v1/webhooks", adminToken, map[string]any{"url": "https://hooks.example.com/h"})
	if wh.status != 201 {
		t.Fatalf("webhook: %d %s", wh.status, wh.body)
	}
	hook := wh.json(t)["id"].(string)
	policy := st.do("GET", "/admin/v1/shows/"+show, adminToken, nil).body
	hooks := st.do("GET", "/admin/v1/webhooks", adminToken, nil).body
	detail := st.do("GET", "/api/v1/shows/"+show, "", nil).body

	venue := `{"name":"V","city":"C","halls":[{"name":"H","rows":[{"row":"A","seats":1,"category":"GOLD","seat":2}]}]}`
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"venue, in a row", "POST", "/admin/v1/venues", venue, "halls[0].rows[0].seat"},
		{"event", "POST", "/admin/v1/events", `{"title":"T","kind":"movie","durationMinutes":90,"duration":90}`, "duration"},
		{"show", "POST", "/admin/v1/shows", `{"eventId":"ev_x","hallId":"hl_x","startsAt":"2030-01-01T10:00:00Z",` +
			`"saleStartsAt":"2029-01-01T10:00:00Z","currency":"INR","prices":{"GOLD":1},"price":1}`, "price"},
		{"sale opening", "PATCH", "/admin/v1/shows/" + show, `{"saleStartsAt":"2029-01-01T10:00:00Z","saleClosesAt":"x"}`, "saleClosesAt"},
		{"ticket policy", "PUT", "/admin/v1/shows/" + show, `{"refundPolcy":{"tiers":[],"feeMinor":0}}`, "refundPolcy"},
		{"refund tiers", "PUT", "/admin/v1/shows/" + show, `{"refundPolicy":{"tiers":[{"untilHoursBefore":1,"percnt":50}]}}`, "refundPolicy.tiers[0].percnt"},
		{"transfer policy", "PUT", "/admin/v1/shows/" + show, `{"transferPolicy":{"enabeld":false}}`, "transferPolicy.enabeld"},
		{"refund", "POST", "/admin/v1/bookings/" + b + "/refund", `{"seatIDs":["A1"],"seat":"A1"}`, "seat"},
		{"webhook", "POST", "/admin/v1/webhooks", `{"url":"https://x.example/h","event":["booking.confirmed"]}`, "event"},
		{"roll secret", "POST", "/admin/v1/webhooks/" + hook + "/roll-secret", `{"graceSecs":0}`, "graceSecs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := st.do(tc.method, tc.path, adminToken, tc.body).problem(t, 422)
			if !strings.Contains(p.Detail, tc.field) {
				t.Fatalf("detail %q does not name %s", p.Detail, tc.field)
			}
		})
	}
	for what, was := range map[string][]byte{"policy": policy, "webhooks": hooks, "show": detail} {
		path := map[string]string{"policy": "/admin/v1/shows/" + show, "webhooks": "/admin/v1/webhooks",
			"show": "/api/v1/shows/" + show}[what]
		if now := st.do("GET", path, adminToken, nil).body; !bytes.Equal(now, was) {
			t.Errorf("%s changed:\n%s\nwas\n%s", what, now, was)
		}
	}
	st.waitStatus(fan, b, "CONFIRMED") // not refunded
}
