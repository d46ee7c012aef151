package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
)

// TestTicketFilesThroughTheEdge: a fan downloads their tickets' PDF through the edge, one page per ticket naming its
// seat; once one ticket has gone to a friend, the PDF holds only the one that still admits, and a deployment
// without a pass certificate answers the Wallet pass with a 404 problem.
func TestTicketFilesThroughTheEdge(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Ticket files", saleIn: -time.Hour})
	tokA, b := paidBooking(t, c, show, "C1", "C2")
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	pdfURL := p.BaseURL + "/api/v1/bookings/" + b.BookingID + "/tickets.pdf"
	seatsIn := func(want ...string) {
		t.Helper()
		status, body := send(t, "GET", pdfURL, "", auth(tokA))
		if status != 200 {
			t.Fatalf("tickets.pdf: %d %s", status, body[:min(len(body), 300)])
		}
		doc := pdftest.Read(t, body)
		if doc.Pages != len(want) {
			t.Fatalf("tickets.pdf has %d pages, want %d (%v)", doc.Pages, len(want), want)
		}
		for i, seat := range want {
			if !strings.Contains(doc.Text[i], seat) {
				t.Errorf("page %d does not name seat %s: %q", i+1, seat, doc.Text[i])
			}
		}
	}
	seatsIn("C1", "C2")
	if status, _ := send(t, "GET", pdfURL, "", auth(guestFan(t, c).Token)); status != 404 {
		t.Errorf("another fan's tickets.pdf: %d, want 404", status)
	}

	var c1 string
	for _, tk := range b.Tickets {
		if tk.SeatID == "C1" {
			c1 = tk.TicketID
		}
	}
	tokB := guestFan(t, c).Token
	status, body := send(t, "POST", p.BaseURL+"/api/v1/tickets/"+c1+"/transfer", `{}`, auth(tokA))
	var sent struct{ ClaimURL, TransferID string }
	if err := json.Unmarshal(body, &sent); status != 201 || err != nil {
		t.Fatalf("transfer: %d %s", status, body)
	}
	_, secret, _ := strings.Cut(sent.ClaimURL, "#")
	if status, body := send(t, "POST", p.BaseURL+"/api/v1/transfers/"+sent.TransferID+"/claim", `{"secret":"`+secret+`"}`,
		auth(tokB)); status != 200 {
		t.Fatalf("claim: %d %s", status, body)
	}
	seatsIn("C2")

	status, body = send(t, "GET", p.BaseURL+"/api/v1/tickets/"+c1+"/pass.pkpass", "", auth(tokA))
	var prob struct{ Detail string }
	if err := json.Unmarshal(body, &prob); status != 404 || err != nil || prob.Detail == "" {
		t.Errorf("a Wallet pass with no certificate configured: %d %s, want a 404 problem", status, body)
	}
}
