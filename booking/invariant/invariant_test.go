package invariant_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// ledger plants bookings in every state straight into a fresh database, so each invariant can be broken on purpose.
type ledger struct {
	t     *testing.T
	pool  *pgxpool.Pool
	st    *postgres.Store
	show  string
	fence int64
}

func newLedger(t *testing.T) *ledger {
	t.Helper()
	pool := pgtest.New(t)
	st := postgres.New(pool)
	ctx := context.Background()
	v := booking.Venue{Name: "V", City: "C", Halls: []booking.Hall{{Name: "H", Rows: []booking.Row{{Label: "A", Seats: 9, Category: "GOLD"},
		{Label: "B", Seats: 9, Category: "GOLD"}}}}}
	if err := st.CreateVenue(ctx, &v); err != nil {
		t.Fatal(err)
	}
	e := booking.Event{Title: "E", Kind: "movie", DurationMinutes: 90}
	if err := st.CreateEvent(ctx, &e); err != nil {
		t.Fatal(err)
	}
	sh := booking.Show{EventID: e.ID, HallID: v.Halls[0].ID, StartsAt: time.Now().Add(72 * time.Hour),
		SaleStartsAt: time.Now().Add(-time.Hour), Currency: "INR", Prices: map[string]int64{"GOLD": 100}}
	if err := st.CreateShow(ctx, &sh); err != nil {
		t.Fatal(err)
	}
	return &ledger{t: t, pool: pool, st: st, show: sh.ID}
}

func (l *ledger) exec(sql string, args ...any) {
	l.t.Helper()
	if _, err := l.pool.Exec(context.Background(), sql, args...); err != nil {
		l.t.Fatalf("%s: %v", sql, err)
	}
}

// held creates a HELD booking of the seats.
func (l *ledger) held(seats ...string) string {
	l.t.Helper()
	l.fence++
	b := booking.Booking{ID: booking.NewID("bk_"), UserID: "u", ShowID: l.show, SeatIDs: seats, TotalAmount: int64(100 * len(seats)),
		Currency: "INR", Fence: l.fence, ExpiresAt: time.Now().Add(time.Minute), CreatedAt: time.Now()}
	if err := l.st.CreateHold(context.Background(), &b); err != nil {
		l.t.Fatal(err)
	}
	return b.ID
}

// attempt records a payment attempt of the booking in the given state.
func (l *ledger) attempt(bookingID, state string) string {
	l.t.Helper()
	id := booking.NewID("pa_")
	l.exec(`INSERT INTO payment_attempts (id, booking_id, user_id, idempotency_key, request_hash, payment_method,
		amount, currency, state, intent_id, lease_until) SELECT $1, $2, 'u', $1, 'h', 'pm_card_ok', total_amount, 'INR', $3,
		'pi_' || $1, now() FROM bookings WHERE id = $2`, id, bookingID, state)
	return id
}

// sold confirms the booking with a payment in the given status and captured amount, and a ticket per seat.
func (l *ledger) sold(status string, captured int64, seats ...string) string {
	l.t.Helper()
	id := l.held(seats...)
	if _, err := l.st.Confirm(context.Background(), id); err != nil {
		l.t.Fatal(err)
	}
	a := l.attempt(id, "CONFIRMED")
	l.exec(`INSERT INTO payments (id, booking_id, attempt_id, intent_id, amount, currency, status, captured_amount)
		SELECT 'pay_' || $1, $1, $2, 'pi_' || $2, total_amount, 'INR', $3, $4 FROM bookings WHERE id = $1`, id, a, status, captured)
	l.exec(`INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status)
		SELECT 'tk_' || $1 || s, $1, 'u', show_id, s, 'code', 'VALID' FROM bookings, unnest(seat_ids) s WHERE id = $1`, id)
	return id
}

// refund records a settled refund of the seats of a confirmed booking, returning amount of their price
// (100 each), as the refund's transaction and the gateway's answer would; the booking is REFUNDED when no seat is
// left.
func (l *ledger) refund(id string, amount int64, seats ...string) {
	l.t.Helper()
	l.exec(`DELETE FROM sold_seats WHERE booking_id = $1 AND seat_id = ANY($2)`, id, seats)
	l.exec(`UPDATE tickets SET status = 'VOID' WHERE booking_id = $1 AND seat_id = ANY($2)`, id, seats)
	l.exec(`INSERT INTO refunds (id, booking_id, show_id, payment_id, seat_ids, seats_amount, amount_due, amount, status)
		VALUES ($1, $2, $3, 'pay_' || $2, $4, $5, $6, $6, 'SUCCEEDED')`, booking.NewID("rf_"), id, l.show, seats,
		int64(100*len(seats)), amount)
	l.exec(`UPDATE payments SET refunded_amount = refunded_amount + $2 WHERE booking_id = $1`, id, amount)
	l.exec(`UPDATE bookings SET status = 'REFUNDED' WHERE id = $1
		AND NOT EXISTS (SELECT 1 FROM sold_seats WHERE booking_id = $1)`, id)
	l.exec(`UPDATE payments SET status = 'REFUNDED' WHERE booking_id = $1
		AND NOT EXISTS (SELECT 1 FROM sold_seats WHERE booking_id = $1)`, id)
}

func (l *ledger) check(opts invariant.Options) []invariant.Violation {
	l.t.Helper()
	vs, err := invariant.Check(context.Background(), l.pool, opts)
	if err != nil {
		l.t.Fatal(err)
	}
	return vs
}

func TestCleanLedger(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.sold("CAPTURED", 200, "A1", "A2")
	declined := l.held("A3")
	l.attempt(declined, "DECLINED")
	expired := l.held("A4")
	l.attempt(expired, "VOIDED")
	l.exec(`UPDATE bookings SET status = 'EXPIRED' WHERE id = $1`, expired)
	refunded := l.sold("CAPTURED", 100, "A5")
	l.refund(refunded, 100, "A5")
	// Half of two seats refunded at 50%, then the rest at 100% less a fee of 10: the policy kept 110.
	partly := l.sold("CAPTURED", 300, "A6", "A7", "A8")
	l.refund(partly, 100, "A6", "A7")
	l.refund(partly, 90, "A8")
	halfway := l.sold("CAPTURED", 200, "B1", "B2")
	l.refund(halfway, 50, "B1")
	if vs := l.check(invariant.Options{}); len(vs) != 0 {
		t.Fatalf("violations in a clean ledger: %v", vs)
	}
}

func TestPlantedViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		plant func(l *ledger) string // returns the booking expected in the violation ("" for a seat)
		want  string
	}{
		{"confirmed, never captured", func(l *ledger) string { return l.sold("AUTHORIZED", 0, "A1") }, invariant.ConfirmedPaid},
		{"confirmed, captured short", func(l *ledger) string { return l.sold("CAPTURED", 50, "A1") }, invariant.ConfirmedPaid},
		{"confirmed, no payment", func(l *ledger) string {
			id := l.held("A1")
			_, _ = l.st.Confirm(context.Background(), id)
			return id
		}, invariant.ConfirmedPaid},
		{"confirmed, ticket missing", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.exec(`DELETE FROM tickets WHERE booking_id = $1 AND seat_id = 'A2'`, id)
			return id
		}, invariant.ConfirmedPaid},
		{"two live tickets for a seat", func(l *ledger) string {
			l.sold("CAPTURED", 100, "A1")
			l.exec(`DROP INDEX tickets_live_seat`)
			l.exec(`INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status)
				VALUES ('tk_dup', $1, 'u', $2, 'A1', 'code', 'VALID')`, l.held("A2"), l.show)
			return ""
		}, invariant.SeatOnce},
		{"seat in the ledger of an expired booking", func(l *ledger) string {
			id := l.held("A1")
			_, _ = l.st.Confirm(context.Background(), id)
			l.exec(`UPDATE bookings SET status = 'EXPIRED' WHERE id = $1`, id)
			return id
		}, invariant.SeatOnce},
		{"expired booking with money authorized", func(l *ledger) string {
			id := l.held("A1")
			l.attempt(id, "AUTHORIZED")
			l.exec(`UPDATE bookings SET status = 'EXPIRED' WHERE id = $1`, id)
			return id
		}, invariant.NoMoneyLeft},
		{"cancelled booking with a void never done", func(l *ledger) string {
			id := l.held("A1")
			l.attempt(id, "VOIDING")
			l.exec(`UPDATE bookings SET status = 'CANCELLED' WHERE id = $1`, id)
			return id
		}, invariant.NoMoneyLeft},
		{"confirmed booking with a second authorization left", func(l *ledger) string {
			id := l.sold("CAPTURED", 100, "A1")
			l.attempt(id, "AUTHORIZED")
			return id
		}, invariant.NoMoneyLeft},
		{"refunded, refund pending", func(l *ledger) string {
			id := l.sold("CAPTURED", 100, "A1")
			l.exec(`DELETE FROM sold_seats WHERE booking_id = $1`, id)
			l.exec(`UPDATE bookings SET status = 'REFUNDED' WHERE id = $1`, id)
			l.exec(`UPDATE tickets SET status = 'VOID' WHERE booking_id = $1`, id)
			l.exec(`UPDATE payments SET status = 'REFUNDING' WHERE booking_id = $1`, id)
			l.exec(`INSERT INTO refunds (id, booking_id, show_id, payment_id, seat_ids, seats_amount, amount_due, status)
				VALUES ('rf_1', $1, $2, 'pay_' || $1, '{A1}', 100, 100, 'PENDING')`, id, l.show)
			return id
		}, invariant.RefundAsPromised},
		{"refunded, tickets still live", func(l *ledger) string {
			id := l.sold("CAPTURED", 100, "A1")
			l.refund(id, 100, "A1")
			l.exec(`UPDATE tickets SET status = 'VALID' WHERE booking_id = $1`, id)
			return id
		}, invariant.RefundAsPromised},
		{"partial refund returned more than promised", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.refund(id, 50, "A1")
			l.exec(`UPDATE refunds SET amount = 100 WHERE booking_id = $1`, id)
			l.exec(`UPDATE payments SET refunded_amount = 100 WHERE booking_id = $1`, id)
			return id
		}, invariant.RefundAsPromised},
		{"refund promised more than the seats cost", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.refund(id, 150, "A1")
			return id
		}, invariant.RefundAsPromised},
		{"refunded seat still sold", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.refund(id, 100, "A1")
			l.exec(`INSERT INTO sold_seats (show_id, seat_id, booking_id, fence) VALUES ($1, 'A1', $2, 99)`, l.show, id)
			return id
		}, invariant.RefundAsPromised},
		{"partially refunded seat's ticket still live", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.refund(id, 100, "A1")
			l.exec(`UPDATE tickets SET status = 'VALID' WHERE booking_id = $1`, id)
			return id
		}, invariant.ConfirmedPaid},
		{"payment refunded more than its refunds", func(l *ledger) string {
			id := l.sold("CAPTURED", 200, "A1", "A2")
			l.refund(id, 50, "A1")
			l.exec(`UPDATE payments SET refunded_amount = 200 WHERE booking_id = $1`, id)
			return id
		}, invariant.RefundAsPromised},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newLedger(t)
			l.sold("CAPTURED", 100, "A9") // a healthy neighbour that must not be reported
			want := tt.plant(l)
			vs := l.check(invariant.Options{})
			if !slices.ContainsFunc(vs, func(v invariant.Violation) bool {
				return v.Invariant == tt.want && v.BookingID == want
			}) {
				t.Fatalf("violations = %v, want %s for booking %q", vs, tt.want, want)
			}
			// Scoped to another show, nothing is reported; inside the grace period neither (money settling).
			if vs := l.check(invariant.Options{ShowIDs: []string{"sh_other"}}); len(vs) != 0 {
				t.Fatalf("violations in another show: %v", vs)
			}
			if tt.want != invariant.SeatOnce {
				if vs := l.check(invariant.Options{Grace: time.Hour}); len(vs) != 0 {
					t.Fatalf("violations inside the grace period: %v", vs)
				}
			}
		})
	}
}

func TestCheckGateway(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	ctx := context.Background()
	intentOf := func(bookingID string) string {
		var id string
		if err := l.pool.QueryRow(ctx, `SELECT intent_id FROM payment_attempts WHERE booking_id = $1 ORDER BY created_at LIMIT 1`,
			bookingID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sold := l.sold("CAPTURED", 100, "A1")
	voided := l.held("A2")
	l.attempt(voided, "VOIDED")
	l.exec(`UPDATE bookings SET status = 'EXPIRED' WHERE id = $1`, voided)
	pending := l.sold("AUTHORIZED", 0, "A3") // confirmed, capture still to come
	partly := l.sold("CAPTURED", 200, "A4", "A5")
	l.refund(partly, 50, "A4") // half of A4 back: the ledger keeps 150
	tests := []struct {
		name  string
		books []invariant.Money
		want  string // booking expected in a violation; "" for none
	}{
		{"agree", []invariant.Money{
			{IntentID: intentOf(sold), BookingID: sold, Received: 100},
			{IntentID: intentOf(voided), BookingID: voided},
			{IntentID: intentOf(pending), BookingID: pending, Capturable: 100},
			{IntentID: intentOf(partly), BookingID: partly, Received: 200, Refunded: 50},
		}, ""},
		{"partial refund returned in full at the gateway", []invariant.Money{{IntentID: intentOf(partly), BookingID: partly,
			Received: 200, Refunded: 100}}, partly},
		{"voided in the ledger, held at the gateway", []invariant.Money{{IntentID: intentOf(voided), BookingID: voided, Capturable: 100}}, voided},
		{"captured twice the price", []invariant.Money{{IntentID: intentOf(sold), BookingID: sold, Received: 200}}, sold},
		{"captured for an expired booking", []invariant.Money{{IntentID: intentOf(voided), BookingID: voided, Received: 100, Refunded: 40}}, voided},
		{"orphan capture for one of our bookings", []invariant.Money{{IntentID: "pi_orphan", BookingID: sold, Received: 100}}, sold},
		{"orphan fully refunded", []invariant.Money{{IntentID: "pi_orphan", BookingID: sold, Received: 100, Refunded: 100}}, ""},
		{"not our booking", []invariant.Money{{IntentID: "pi_foreign", BookingID: "bk_foreign", Capturable: 100}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := invariant.CheckGateway(ctx, l.pool, tt.books, invariant.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(vs) != 0 {
					t.Fatalf("violations %v, want none", vs)
				}
				return
			}
			if len(vs) != 1 || vs[0].BookingID != tt.want || vs[0].Invariant != invariant.GatewayAgrees {
				t.Fatalf("violations %v, want one for %s", vs, tt.want)
			}
		})
	}
}

// resell lists the seller's ticket of seat at price (fee kept), has a buyer's hold of it confirmed through the
// store's own sale (ConfirmTx) with a payment and a ticket, and settles the payout: the returned ids are the
// listing's and the buyer's booking.
func (l *ledger) resell(seller, seat string, price, fee int64) (string, string) {
	l.t.Helper()
	ctx := context.Background()
	lst, err := l.st.CreateListing(ctx, booking.Listing{ID: booking.NewID("rs_"), ShowID: l.show, TicketID: "tk_" + seller + seat,
		BookingID: seller, SellerID: "u", SeatID: seat, Category: "GOLD", FaceValue: 100, Price: price, Fee: fee,
		Currency: "INR", Status: booking.ListingListed, CreatedAt: time.Now()})
	if err != nil {
		l.t.Fatal(err)
	}
	buyer := l.held(seat)
	l.exec(`UPDATE bookings SET total_amount = $2 WHERE id = $1`, buyer, price)
	if err := l.st.AttachResaleHold(ctx, lst.ID, buyer, false); err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.st.Confirm(ctx, buyer); err != nil {
		l.t.Fatal(err)
	}
	a := l.attempt(buyer, "CONFIRMED")
	l.exec(`INSERT INTO payments (id, booking_id, attempt_id, intent_id, amount, currency, status, captured_amount)
		VALUES ('pay_' || $1, $1, $2, 'pi_' || $2, $3, 'INR', 'CAPTURED', $3)`, buyer, a, price)
	l.exec(`INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status)
		VALUES ('tk_' || $1, $1, 'u', $2, $3, 'code2', 'VALID')`, buyer, l.show, seat)
	r, ok, err := l.st.PayoutOf(ctx, buyer)
	if err != nil || !ok || r.AmountDue != price-fee {
		l.t.Fatalf("payout %+v %v %v, want %d due", r, ok, err, price-fee)
	}
	if err := l.st.RefundSucceeded(ctx, r.ID, r.AmountDue, "re_1"); err != nil {
		l.t.Fatal(err)
	}
	return lst.ID, buyer
}

// TestResoldOnce: a resale through the store's own transactions keeps every invariant, of the seller who kept a
// seat and of the one who sold their only one; a payout that does not match its listing, or a ticket LISTED
// without a listing, is a resold-once violation.
func TestResoldOnce(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	kept := l.sold("CAPTURED", 200, "A1", "A2")
	l.resell(kept, "A1", 80, 8)
	only := l.sold("CAPTURED", 100, "A3")
	listing, _ := l.resell(only, "A3", 100, 0)
	listed := l.sold("CAPTURED", 100, "A4")
	if _, err := l.st.CreateListing(context.Background(), booking.Listing{ID: booking.NewID("rs_"), ShowID: l.show,
		TicketID: "tk_" + listed + "A4", BookingID: listed, SellerID: "u", SeatID: "A4", Category: "GOLD", FaceValue: 100,
		Price: 50, Currency: "INR", Status: booking.ListingListed, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if vs := l.check(invariant.Options{}); len(vs) != 0 {
		t.Fatalf("violations after resales: %v", vs)
	}
	var status string
	if err := l.pool.QueryRow(context.Background(), `SELECT status FROM bookings WHERE id = $1`, only).Scan(&status); err != nil || status != "REFUNDED" {
		t.Fatalf("the seller of their only seat: %s (%v), want REFUNDED", status, err)
	}

	l.exec(`UPDATE resale_listings SET fee = 10 WHERE id = $1`, listing)
	l.exec(`UPDATE tickets SET status = 'LISTED' WHERE booking_id = $1 AND seat_id = 'A2'`, kept)
	got := map[string]int{}
	for _, v := range l.check(invariant.Options{}) {
		got[v.Invariant]++
	}
	if got[invariant.ResoldOnce] != 2 {
		t.Fatalf("violations %v, want two of %s (the payout, the stray LISTED ticket)", got, invariant.ResoldOnce)
	}
}
