package app_test

import (
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
)

// paidTickets pays for a booking of seats and returns its tickets' codes by seat.
func (st *stack) paidTickets(fan, show string, seats ...string) (string, map[string]map[string]any) {
	st.t.Helper()
	b := st.hold(fan, show, seats...)
	if p := st.pay(fan, b, sim.CardOK, "k-"+b); p.status != 200 {
		st.t.Fatalf("pay: %d %s", p.status, p.body)
	}
	view := st.waitStatus(fan, b, "CONFIRMED")
	out := map[string]map[string]any{}
	for _, t := range view["tickets"].([]any) {
		tk := t.(map[string]any)
		out[tk["seatId"].(string)] = tk
	}
	return b, out
}

func TestTicketsPDF(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	b, tickets := st.paidTickets(fan, show, "A1", "A2", "A3")

	got := st.do("GET", "/api/v1/bookings/"+b+"/tickets.pdf", fan, nil)
	if got.status != 200 || got.header.Get("Content-Type") != "application/pdf" ||
		!strings.HasPrefix(got.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("pdf: %d %v %s", got.status, got.header, got.body[:min(len(got.body), 200)])
	}
	doc := pdftest.Read(t, got.body)
	if doc.Pages != 3 {
		t.Fatalf("pages %d, want 3", doc.Pages)
	}
	if strings.Contains(strings.Join(doc.Text, "\n"), "Holder") {
		t.Errorf("a fan without a contact is named: %q", doc.Text)
	}
	// The pages name the holder: their contact's e-mail, then the name they gave with it.
	for _, c := range []struct {
		body map[string]string
		want string
	}{
		{map[string]string{"email": "pdf-fan@example.com"}, "Holder: pdf-fan@example.com"},
		{map[string]string{"email": "pdf-fan@example.com", "name": "अनन्या राव"}, "Holder: अनन्या राव"},
	} {
		if r := st.do("PUT", "/api/v1/me/contact", fan, c.body); r.status != 200 {
			t.Fatalf("contact: %d %s", r.status, r.body)
		}
		named := pdftest.Read(t, st.do("GET", "/api/v1/bookings/"+b+"/tickets.pdf", fan, nil).body)
		for i, text := range named.Text {
			if !strings.Contains(text, c.want) {
				t.Errorf("page %d: %q lacks %q", i+1, text, c.want)
			}
		}
	}
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "pdf-fan@example.com",
		"name": "bad\u0007name"}).problem(t, 422)
	for i, seat := range []string{"A1", "A2", "A3"} {
		if !strings.Contains(doc.Text[i], "Seat "+seat) || !strings.Contains(doc.Text[i], tickets[seat]["ticketId"].(string)) {
			t.Errorf("page %d: %q lacks seat %s and its ticket", i+1, doc.Text[i], seat)
		}
	}

	// A refunded seat leaves the file, and the code its old page carried no longer checks in.
	if r := st.do("POST", "/api/v1/bookings/"+b+"/refund", fan, map[string]any{"seatIds": []string{"A1"}}); r.status != 200 {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	after := pdftest.Read(t, st.do("GET", "/api/v1/bookings/"+b+"/tickets.pdf", fan, nil).body)
	if after.Pages != 2 || strings.Contains(strings.Join(after.Text, "\n"), "Seat A1") {
		t.Fatalf("after refund: %d pages %q, want A2 and A3 only", after.Pages, after.Text)
	}
	st.do("POST", "/api/v1/checkin", staffToken, map[string]string{"code": tickets["A1"]["code"].(string)}).problem(t, 409)
	if in := st.do("POST", "/api/v1/checkin", staffToken, map[string]string{"code": tickets["A2"]["code"].(string)}); in.status != 200 {
		t.Fatalf("A2 check-in: %d %s", in.status, in.body)
	}

	// Another fan's booking is not found; an unpaid one has no tickets to print.
	st.do("GET", "/api/v1/bookings/"+b+"/tickets.pdf", st.guest(), nil).problem(t, 404)
	st.do("GET", "/api/v1/bookings/"+st.hold(fan, show, "A5")+"/tickets.pdf", fan, nil).problem(t, 409)
	st.do("GET", "/api/v1/bookings/not-an-id!/tickets.pdf", fan, nil).problem(t, 404)
}
