package booking_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

// outboxOf lists the outbox rows about subject, oldest first, as "type" strings, with their payloads.
func outboxOf(t *testing.T, e *payEnv, subject string) ([]string, []map[string]any) {
	t.Helper()
	rows, err := e.Pool.Query(context.Background(), `SELECT type, payload FROM outbox WHERE aggregate_id = $1 ORDER BY id`, subject)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var types []string
	var payloads []map[string]any
	for rows.Next() {
		var typ string
		var raw []byte
		if err := rows.Scan(&typ, &raw); err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		types, payloads = append(types, typ), append(payloads, p)
	}
	return types, payloads
}

// TestLifecycleEventsInOutbox: every step of a booking's life writes its event in the statement or transaction
// that made it true: held, cancelled, expired (by the sweep), payment declined, payment authorized, confirmed,
// refunded and checked in; each payload names the show and the fan.
func TestLifecycleEventsInOutbox(t *testing.T) {
	t.Parallel()
	// Long enough for a declined and a paid attempt on one hold at load 20 (300 ms was not), short enough to
	// wait out one hold's expiry.
	const ttl = 2 * time.Second
	e := newPayEnv(t, booking.Config{HoldTTL: ttl}, sim.Config{}, booking.CheckoutConfig{RefundWindow: time.Hour})
	ctx := context.Background()

	cancelled := e.hold(t, "u1", "A1")
	if _, _, err := e.Svc.Cancel(ctx, cancelled.ID, "u1"); err != nil {
		t.Fatal(err)
	}
	expired := e.hold(t, "u2", "A2")
	time.Sleep(ttl + 100*time.Millisecond)
	e.Svc.Reconcile(ctx)
	e.Svc.Reconcile(ctx) // a second sweep finds nothing new to expire

	// A hold long enough to pay for: the pay saga extends it past the gateway call.
	paid, _, err := e.Svc.Hold(ctx, booking.HoldRequest{UserID: "u3", ShowID: e.Show.ID, SeatIDs: []string{"B1", "B2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.payWith(paid, sim.CardDeclined, "k1"); !errors.Is(err, booking.ErrPaymentDeclined) {
		t.Fatalf("declined card: %v", err)
	}
	res, err := e.payWith(paid, sim.CardOK, "k2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pay.CheckIn(ctx, res.Booking.Tickets[0].Code, "gate-1"); err != nil {
		t.Fatal(err)
	}
	refunded := e.hold(t, "u4", "C1")
	if _, err := e.payWith(refunded, sim.CardOK, "k3"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pay.Refund(ctx, booking.RefundRequest{BookingID: refunded.ID, UserID: "u4"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		subject string
		want    []string
		user    string
	}{
		{cancelled.ID, []string{booking.EventHeld, booking.EventCancelled}, "u1"},
		{expired.ID, []string{booking.EventHeld, booking.EventExpired}, "u2"},
		{paid.ID, []string{booking.EventHeld, booking.EventPaymentDeclined, booking.EventPaymentAuthorized,
			booking.EventConfirmed}, "u3"},
		{res.Booking.Tickets[0].ID, []string{booking.EventCheckedIn}, "u3"},
		{refunded.ID, []string{booking.EventHeld, booking.EventPaymentAuthorized, booking.EventConfirmed,
			booking.EventRefunded}, "u4"},
	}
	for _, tc := range tests {
		types, payloads := outboxOf(t, e, tc.subject)
		if fmt.Sprint(types) != fmt.Sprint(tc.want) {
			t.Errorf("%s: events %v, want %v", tc.subject, types, tc.want)
			continue
		}
		for i, p := range payloads {
			if p["showId"] != e.Show.ID || p["userId"] != tc.user {
				t.Errorf("%s %s: payload %v lacks the show or the fan", tc.subject, types[i], p)
			}
		}
	}
	_, payloads := outboxOf(t, e, expired.ID)
	if at, _ := payloads[1]["expiresAt"].(string); !timeParses(at) {
		t.Errorf("expiresAt %q is not RFC 3339", at)
	}
}

func timeParses(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}
