package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/loadtest/check"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// paidBooking holds and pays seats of show for a new guest through the edge; it returns the guest's token and
// the confirmed booking.
func paidBooking(t *testing.T, c *fsclient.Client, show string, seats ...string) (string, fsclient.Booking) {
	t.Helper()
	ctx := context.Background()
	g := guestFan(t, c)
	b, res, err := c.Hold(ctx, g.Token, "", show, seats, "")
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("hold %v: %d %v %v", seats, res.Status, err, res.Problem)
	}
	b, res, err = c.Pay(ctx, g.Token, "", b.BookingID, sim.CardOK, "pay-"+b.BookingID)
	if err != nil || res.Status != http.StatusOK || b.Status != "CONFIRMED" {
		t.Fatalf("pay: %d %v %v", res.Status, err, res.Problem)
	}
	return g.Token, b
}

type refundAnswer struct {
	Status  string `json:"status"`
	Refunds []struct {
		SeatIDs  []string  `json:"seatIds"`
		Amount   int64     `json:"amount"`
		Currency string    `json:"currency"`
		At       time.Time `json:"at"`
	} `json:"refunds"`
}

// TestPartialRefundThroughTheEdge: the partial refund. A 4-seat booking has 2 seats refunded under a
// tiered policy at a time in its 50% tier: the fan sees the amount first, the gateway's own books return half of
// those two seats' price, the two seats are on sale again, their tickets are refused at the door while the other
// two check in, and the load test's store checker finds nothing wrong.
func TestPartialRefundThroughTheEdge(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	ctx := context.Background()
	show := newShow(t, c, showSpec{title: "Refunds", saleIn: -time.Hour}) // starts in 72 h; row A is 90,000 a seat
	admin(t, p, "PUT", "/admin/v1/shows/"+show,
		`{"refundPolicy":{"tiers":[{"untilHoursBefore":100,"percent":100},{"untilHoursBefore":48,"percent":50}]}}`, nil)
	var policy struct {
		RefundPolicy struct {
			Tiers []struct{ Percent int } `json:"tiers"`
		} `json:"refundPolicy"`
	}
	admin(t, p, "GET", "/admin/v1/shows/"+show, "", &policy)
	if len(policy.RefundPolicy.Tiers) != 2 {
		t.Fatalf("policy read back: %+v", policy)
	}
	tok, b := paidBooking(t, c, show, "A1", "A2", "A3", "A4")
	auth := map[string]string{"Authorization": "Bearer " + tok}
	base := p.BaseURL + "/api/v1/bookings/" + b.BookingID + "/refund"

	status, body := send(t, "GET", base+"?seatIds=A1,A2", "", auth)
	var q struct {
		Amount  int64 `json:"amount"`
		Percent int   `json:"percent"`
	}
	if err := json.Unmarshal(body, &q); status != 200 || err != nil || q.Amount != 90000 || q.Percent != 50 {
		t.Fatalf("quote: %d %s; want 90000 at 50%%", status, body)
	}
	status, body = send(t, "POST", base, `{"seatIds":["A1","A2"]}`, auth)
	var got refundAnswer
	if err := json.Unmarshal(body, &got); status != 200 || err != nil || got.Status != "CONFIRMED" ||
		len(got.Refunds) != 1 || got.Refunds[0].Amount != 90000 || len(got.Refunds[0].SeatIDs) != 2 {
		t.Fatalf("refund: %d %s; want CONFIRMED with one refund of 90000 for two seats", status, body)
	}
	ledger, err := sim.FetchLedger(ctx, p.PaymentURL, "sk_test_e2e")
	if err != nil {
		t.Fatal(err)
	}
	var money []invariant.Money
	for _, e := range ledger {
		if e.BookingID == b.BookingID && (e.Received != 360000 || e.Refunded != 90000) {
			t.Fatalf("gateway: %+v; want 360000 received, 90000 refunded", e)
		}
		money = append(money, invariant.Money{IntentID: e.IntentID, BookingID: e.BookingID, Capturable: e.Capturable,
			Received: e.Received, Refunded: e.Refunded})
	}
	m, _, err := c.Seats(ctx, tok, "", show)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Seats {
		want := map[string]string{"A1": "AVAILABLE", "A2": "AVAILABLE", "A3": "BOOKED", "A4": "BOOKED"}[s.SeatID]
		if want != "" && s.Status != want {
			t.Fatalf("seat %s is %s, want %s", s.SeatID, s.Status, want)
		}
	}
	for _, tk := range b.Tickets {
		want := map[string]int{"A1": 409, "A2": 409, "A3": 200, "A4": 200}[tk.SeatID]
		if got := checkIn(t, p, tk.Code); got != want {
			t.Fatalf("check-in of %s: %d, want %d", tk.SeatID, got, want)
		}
	}
	// Outside every tier: a show whose only tier has closed refuses with 409.
	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"refundPolicy":{"tiers":[{"untilHoursBefore":80,"percent":100}]}}`, nil)
	if status, body := send(t, "POST", base, `{"seatIds":["A3"]}`, auth); status != 409 {
		t.Fatalf("refund outside every tier: %d %s, want 409", status, body)
	}
	if status, body := send(t, "POST", base, `{"seatIds":["Q9"]}`, auth); status != 422 {
		t.Fatalf("refund of a seat not in the booking: %d %s, want 422", status, body)
	}

	r, err := check.Run(ctx, check.Config{DatabaseURL: p.DatabaseURL, ShowIDs: []string{show}, ReconcileInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Violations) != 0 {
		t.Fatalf("store checker: %v", r.Violations)
	}
	pool, err := pgxpool.New(ctx, p.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	vs, err := invariant.CheckGateway(ctx, pool, money, invariant.Options{ShowIDs: []string{show}})
	if err != nil || len(vs) != 0 {
		t.Fatalf("gateway against the ledger: %v %v", vs, err)
	}
}

// TestTransferThroughTheEdge: fan A sends a ticket, fan B claims it with the link's secret; A's old code is
// refused at the door, B's new one checks in once, and both list the transfer.
func TestTransferThroughTheEdge(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Transfers", saleIn: -time.Hour})
	tokA, b := paidBooking(t, c, show, "B1")
	tokB := guestFan(t, c).Token
	status, body := send(t, "POST", p.BaseURL+"/api/v1/tickets/"+b.Tickets[0].TicketID+"/transfer",
		`{"email":"friend@example.com"}`, map[string]string{"Authorization": "Bearer " + tokA})
	var sent struct{ ClaimURL, TransferID string }
	if err := json.Unmarshal(body, &sent); status != 201 || err != nil || !strings.Contains(sent.ClaimURL, "#") {
		t.Fatalf("transfer: %d %s", status, body)
	}
	_, secret, _ := strings.Cut(sent.ClaimURL, "#")
	claim := p.BaseURL + "/api/v1/transfers/" + sent.TransferID + "/claim"
	if status, body := send(t, "POST", claim, `{"secret":"nope"}`, map[string]string{"Authorization": "Bearer " + tokB}); status != 404 {
		t.Fatalf("claim with a wrong secret: %d %s, want 404", status, body)
	}
	status, body = send(t, "POST", claim, `{"secret":"`+secret+`"}`, map[string]string{"Authorization": "Bearer " + tokB})
	var nt struct{ Code, SeatID string }
	if err := json.Unmarshal(body, &nt); status != 200 || err != nil || nt.SeatID != "B1" || nt.Code == b.Tickets[0].Code {
		t.Fatalf("claim: %d %s", status, body)
	}
	if got := checkIn(t, p, b.Tickets[0].Code); got != 409 {
		t.Fatalf("A's old code: %d, want 409", got)
	}
	if got := checkIn(t, p, nt.Code); got != 200 {
		t.Fatalf("B's new code: %d, want 200", got)
	}
	if got := checkIn(t, p, nt.Code); got != 409 {
		t.Fatalf("B's new code again: %d, want 409", got)
	}
	for _, tok := range []string{tokA, tokB} {
		status, body := send(t, "GET", p.BaseURL+"/api/v1/transfers", "", map[string]string{"Authorization": "Bearer " + tok})
		if status != 200 || !strings.Contains(string(body), `"status":"CLAIMED"`) {
			t.Fatalf("transfers listed: %d %s", status, body)
		}
	}
	// The operator reads both steps in the audit log, each once, by the fan who took it.
	sentEntry := auditEntry(t, p, show, "ticket.transfer_sent", 1)
	claimed := auditEntry(t, p, show, "ticket.transferred", 1)
	if !strings.HasPrefix(sentEntry.Actor, "fan ") || sentEntry.Actor == claimed.Actor || !strings.Contains(string(claimed.New), nt.SeatID) {
		t.Errorf("audit entries %+v and %+v", sentEntry, claimed)
	}
}

type auditLogEntry struct {
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	ShowID  string          `json:"showId"`
	New     json.RawMessage `json:"new"`
	EventID string          `json:"eventId"`
}

// auditEntry waits for the show's audit log to hold n entries of action (recorded from the event stream, so a
// moment after the change) and returns the newest.
func auditEntry(t *testing.T, p *platformtest.Platform, show, action string, n int) auditLogEntry {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var log struct{ Entries []auditLogEntry }
		admin(t, p, "GET", "/admin/v1/audit?showId="+show, "", &log)
		var got []auditLogEntry
		for _, e := range log.Entries {
			if e.Action == action {
				got = append(got, e)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("audit log has %d %s entries, want %d: %+v", len(got), action, n, log.Entries)
			}
			return got[0]
		}
	}
}

// TestTransferSettingsThroughTheEdge: the operator switches a show's transfers off and on and sets a cut-off
// (PUT /admin/v1/shows/{id} "transferPolicy"); a fan's transfer the settings refuse is a 409 problem+json that
// says why, a malformed setting a 400 or 422, and each change is in the operator's audit log.
func TestTransferSettingsThroughTheEdge(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Transfer settings", saleIn: -time.Hour}) // starts in 72 h
	tok, b := paidBooking(t, c, show, "B2")
	transfer := func() (int, string) {
		req, _ := http.NewRequest("POST", p.BaseURL+"/api/v1/tickets/"+b.Tickets[0].TicketID+"/transfer", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var pb struct{ Type, Detail string }
		_ = json.NewDecoder(res.Body).Decode(&pb)
		if res.StatusCode >= 400 && res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("refusal as %q", res.Header.Get("Content-Type"))
		}
		return res.StatusCode, pb.Type + " " + pb.Detail
	}
	type policy struct {
		TransferPolicy struct {
			Enabled     bool       `json:"enabled"`
			CutoffHours *float64   `json:"cutoffHours"`
			ClosesAt    *time.Time `json:"closesAt"`
		} `json:"transferPolicy"`
	}
	var got policy
	admin(t, p, "GET", "/admin/v1/shows/"+show, "", &got)
	if !got.TransferPolicy.Enabled || got.TransferPolicy.CutoffHours != nil || got.TransferPolicy.ClosesAt == nil {
		t.Fatalf("default transfer policy %+v, want on until the show", got.TransferPolicy)
	}

	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"transferPolicy":{"enabled":false}}`, &got)
	if got.TransferPolicy.Enabled {
		t.Fatalf("switched off, the show answers %+v", got.TransferPolicy)
	}
	if st, why := transfer(); st != http.StatusConflict || !strings.HasSuffix(strings.Fields(why)[0], "/transfer-closed") ||
		!strings.Contains(why, "does not allow transfers") {
		t.Fatalf("transfer with transfers off: %d %q", st, why)
	}
	// On again, with a cut-off 100 h before a show 72 h away: already past.
	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"transferPolicy":{"enabled":true,"cutoffHours":100}}`, &got)
	if !got.TransferPolicy.Enabled || got.TransferPolicy.CutoffHours == nil || *got.TransferPolicy.CutoffHours != 100 {
		t.Fatalf("cut-off set, the show answers %+v", got.TransferPolicy)
	}
	if st, why := transfer(); st != http.StatusConflict || !strings.Contains(why, "transfers closed at") {
		t.Fatalf("transfer past the cut-off: %d %q", st, why)
	}
	for body, want := range map[string]int{
		`{"transferPolicy":{"cutoffHours":-1}}`:      http.StatusUnprocessableEntity,
		`{"transferPolicy":{"cutoffHours":"soon"}}`:  http.StatusBadRequest,
		`{"transferPolicy":{"enabled":"yes"}}`:       http.StatusBadRequest,
		`{"transferPolicy":null}`:                    http.StatusBadRequest,
		`{"transferPolicy":{"cutoffHours":1000000}}`: http.StatusUnprocessableEntity,
	} {
		st, res := send(t, "PUT", p.BaseURL+"/admin/v1/shows/"+show, body,
			map[string]string{"Authorization": "Bearer " + p.AdminToken, "Content-Type": "application/json"})
		if st != want || !strings.Contains(string(res), "transferPolicy") {
			t.Errorf("PUT %s: %d %s, want %d naming transferPolicy", body, st, res, want)
		}
	}
	// A cut-off 24 h before the show leaves the transfer open; the refund policy is untouched by all this.
	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"transferPolicy":{"cutoffHours":24}}`, &got)
	if st, why := transfer(); st != http.StatusCreated {
		t.Fatalf("transfer before the cut-off: %d %q", st, why)
	}
	var mine struct{ Transfers []struct{ TransferID string } }
	fanAuth := map[string]string{"Authorization": "Bearer " + tok}
	_, body := send(t, "GET", p.BaseURL+"/api/v1/transfers", "", fanAuth)
	if err := json.Unmarshal(body, &mine); err != nil || len(mine.Transfers) != 1 {
		t.Fatalf("transfers: %s", body)
	}
	if st, body := send(t, "DELETE", p.BaseURL+"/api/v1/transfers/"+mine.Transfers[0].TransferID, "", fanAuth); st != 200 {
		t.Fatalf("cancel: %d %s", st, body)
	}
	if e := auditEntry(t, p, show, "ticket.transfer_cancelled", 1); !strings.Contains(string(e.New), `"reason":"sender"`) {
		t.Errorf("the cancel's audit entry: %+v", e)
	}
	auditEntry(t, p, show, "ticket.transfer_sent", 1)
	var entries struct {
		Entries []struct {
			Action string          `json:"action"`
			New    json.RawMessage `json:"new"`
		} `json:"entries"`
	}
	admin(t, p, "GET", "/admin/v1/audit?showId="+show, "", &entries)
	changes := 0
	for _, e := range entries.Entries {
		if e.Action == "show.ticketPolicy" && strings.Contains(string(e.New), `"transferPolicy"`) {
			changes++
		}
	}
	if changes != 3 {
		t.Errorf("audit log has %d ticket-policy changes, want 3: %+v", changes, entries.Entries)
	}
}
