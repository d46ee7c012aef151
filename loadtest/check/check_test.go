package check_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

func id(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", strings.Fields(sql)[0:3], err)
	}
}

// newShow plants a venue, hall, event and a show on sale, and returns the show's id.
func newShow(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	v, h, e, s := id("v_"), id("h_"), id("e_"), id("s_")
	exec(t, pool, `INSERT INTO venues (id, name, city) VALUES ($1, 'Checker Hall', 'Test')`, v)
	exec(t, pool, `INSERT INTO halls (id, venue_id, name, total_seats) VALUES ($1, $2, 'One', 4)`, h, v)
	for i, seat := range []string{"A1", "A2", "A3", "A4"} {
		exec(t, pool, `INSERT INTO seats (hall_id, seat_id, row_label, number, category, ord) VALUES ($1, $2, 'A', $3, 'GOLD', $3)`, h, seat, i+1)
	}
	exec(t, pool, `INSERT INTO events (id, title, kind, duration_minutes) VALUES ($1, 'Checked', 'MOVIE', 120)`, e)
	exec(t, pool, `INSERT INTO shows (id, event_id, hall_id, starts_at, sale_starts_at, currency, prices)
		VALUES ($1, $2, $3, now() + interval '30 days', now() - interval '1 hour', 'INR', '{"GOLD": 45000}')`, s, e, h)
	return s
}

// booking plants a booking; expires is relative to now.
func booking(t *testing.T, pool *pgxpool.Pool, show, status string, expires time.Duration, seats ...string) string {
	t.Helper()
	b := id("b_")
	exec(t, pool, `INSERT INTO bookings (id, user_id, show_id, status, seat_ids, total_amount, currency, fence, expires_at)
		VALUES ($1, 'u1', $2, $3, $4, 45000, 'INR', 1, now() + make_interval(secs => $5))`,
		b, show, status, seats, expires.Seconds())
	return b
}

// paid plants a CONFIRMED booking the way the pay saga leaves one: seats in the ledger, a confirmed attempt, a
// captured payment for the total and one live ticket per seat.
func paid(t *testing.T, pool *pgxpool.Pool, show string, seats ...string) string {
	t.Helper()
	b := booking(t, pool, show, "CONFIRMED", time.Minute, seats...)
	sell(t, pool, show, b, seats...)
	capture(t, pool, b, "CAPTURED")
	for _, s := range seats {
		exec(t, pool, `INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status)
			VALUES ($1, $2, 'u1', $3, $4, 'code', 'VALID')`, id("t_"), b, show, s)
	}
	return b
}

// capture plants a payment attempt and a payment of 45000 in the given status for booking b.
func capture(t *testing.T, pool *pgxpool.Pool, b, status string) {
	t.Helper()
	a, intent := id("a_"), id("pi_")
	exec(t, pool, `INSERT INTO payment_attempts (id, booking_id, user_id, idempotency_key, request_hash, payment_method,
		amount, currency, state, outcome, intent_id, lease_until, updated_at)
		VALUES ($1, $2, 'u1', $3, 'h', 'pm_card_ok', 45000, 'INR', 'CONFIRMED', 'CONFIRMED', $4, now(), now() - interval '1 hour')`,
		a, b, id("k_"), intent)
	exec(t, pool, `INSERT INTO payments (id, booking_id, attempt_id, intent_id, amount, currency, status, captured_amount,
		captured_at, updated_at) VALUES ($1, $2, $3, $4, 45000, 'INR', $5, 45000, now(), now() - interval '1 hour')`,
		id("p_"), b, a, intent, status)
}

func sell(t *testing.T, pool *pgxpool.Pool, show, bookingID string, seats ...string) {
	t.Helper()
	for _, s := range seats {
		exec(t, pool, `INSERT INTO sold_seats (show_id, seat_id, booking_id, fence) VALUES ($1, $2, $3, 1)`, show, s, bookingID)
	}
}

func TestMain(m *testing.M) { os.Exit(redistest.RunEach(m)) }

func redisClient(t *testing.T) redis.UniversalClient { return redistest.New(t).Client }

// lock plants a seat lock and removes exactly that key when the test ends.
func lock(t *testing.T, rdb redis.UniversalClient, show, seat, bookingID string) {
	t.Helper()
	k := rediskey.Seat(show, seat)
	if err := rdb.Set(context.Background(), k, bookingID+"|1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), k) })
}

// A lock the load left for nobody in its last moments is booking's reconciler's to release within its orphan
// grace: one released by then (here, it lapses) is no violation; one still there is.
func TestLockReleasedWithinTheGraceIsNoViolation(t *testing.T) {
	pool := pgtest.New(t)
	rdb := redisClient(t)
	show := newShow(t, pool)
	k := rediskey.Seat(show, "A1")
	if err := rdb.Set(context.Background(), k, "b_lost_answer|1", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	lock(t, rdb, show, "A2", "b_nobody")
	cfg := check.Config{ShowIDs: []string{show}, ReconcileInterval: 500 * time.Millisecond,
		Grace: 100 * time.Millisecond, OrphanGrace: 400 * time.Millisecond}
	r, err := check.Check(context.Background(), pool, rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := byInvariant(r)[loadtest.InvLocks]
	if len(got) != 1 || !strings.Contains(got[0], "b_nobody") {
		t.Fatalf("got lock violations %v, want only the one still held for b_nobody", got)
	}
}

func byInvariant(r check.Result) map[string][]string {
	m := map[string][]string{}
	for _, v := range r.Violations {
		m[v.Invariant] = append(m[v.Invariant], v.Detail)
	}
	return m
}

func TestCleanShowHasNoViolations(t *testing.T) {
	pool := pgtest.New(t)
	rdb := redisClient(t)
	show := newShow(t, pool)
	paid(t, pool, show, "A1", "A2")
	held := booking(t, pool, show, "HELD", 5*time.Minute, "A3")
	lock(t, rdb, show, "A3", held)
	booking(t, pool, show, "EXPIRED", -time.Hour, "A4")

	r, err := check.Check(context.Background(), pool, rdb, check.Config{ShowIDs: []string{show}, ReconcileInterval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Violations) != 0 {
		t.Fatalf("got violations %v, want none", r.Violations)
	}
	if len(r.Checked) < 8 {
		t.Errorf("got checked %v, want the store and payment invariants", r.Checked)
	}
}

func TestPlantedViolationsAreReported(t *testing.T) {
	pool := pgtest.New(t)
	rdb := redisClient(t)
	// A wrong lock is looked at again after OrphanGrace, a reconcile and Grace: short here, so the planted ones
	// are reported within a second.
	cfg := check.Config{ReconcileInterval: 500 * time.Millisecond, Grace: 100 * time.Millisecond,
		OrphanGrace: 100 * time.Millisecond}

	tests := []struct {
		name  string
		plant func(t *testing.T, show string)
		want  string
		also  []string // other invariants the same plant necessarily breaks
	}{
		{"double sale: two CONFIRMED bookings of one seat", func(t *testing.T, show string) {
			paid(t, pool, show, "A1")
			b := booking(t, pool, show, "CONFIRMED", time.Minute, "A1")
			capture(t, pool, b, "CAPTURED")
		}, loadtest.InvSeatSoldTwice, []string{loadtest.InvSoldMatchesLedger, invariant.ConfirmedPaid}},
		{"orphan capture: money taken for a CANCELLED booking", func(t *testing.T, show string) {
			b := booking(t, pool, show, "CANCELLED", time.Minute, "A4")
			capture(t, pool, b, "CAPTURED")
		}, invariant.NoMoneyLeft, nil},
		{"ledger row of a booking that is not CONFIRMED", func(t *testing.T, show string) {
			b := booking(t, pool, show, "CANCELLED", time.Minute, "A2")
			sell(t, pool, show, b, "A2")
		}, loadtest.InvSoldMatchesLedger, []string{invariant.SeatOnce}},
		{"CONFIRMED booking missing from the ledger", func(t *testing.T, show string) {
			b := booking(t, pool, show, "CONFIRMED", time.Minute, "A3")
			capture(t, pool, b, "CAPTURED")
		}, loadtest.InvSoldMatchesLedger, []string{invariant.ConfirmedPaid}},
		{"stale hold", func(t *testing.T, show string) {
			booking(t, pool, show, "HELD", -2*time.Minute, "A4")
		}, loadtest.InvStaleHold, nil},
		{"lock naming an unknown booking", func(t *testing.T, show string) {
			lock(t, rdb, show, "A1", "b_nobody")
		}, loadtest.InvLocks, nil},
		{"lock outliving its cancelled booking", func(t *testing.T, show string) {
			b := booking(t, pool, show, "CANCELLED", time.Minute, "A2")
			lock(t, rdb, show, "A2", b)
		}, loadtest.InvLocks, nil},
		{"lock on a seat sold to someone else", func(t *testing.T, show string) {
			paid(t, pool, show, "A3")
			b := booking(t, pool, show, "HELD", time.Minute, "A3")
			lock(t, rdb, show, "A3", b)
		}, loadtest.InvLocks, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			show := newShow(t, pool)
			tc.plant(t, show)
			c := cfg
			c.ShowIDs = []string{show}
			r, err := check.Check(context.Background(), pool, rdb, c)
			if err != nil {
				t.Fatal(err)
			}
			got := byInvariant(r)
			if len(got[tc.want]) == 0 {
				t.Fatalf("got violations %v, want one of %s", r.Violations, tc.want)
			}
			for inv := range got {
				if inv != tc.want && !slices.Contains(tc.also, inv) {
					t.Errorf("got an unexpected %s violation: %v", inv, got[inv])
				}
			}
		})
	}
}

func TestRunOpensTheStoresByURL(t *testing.T) {
	pool, url := pgtest.NewWithURL(t)
	show := newShow(t, pool)
	booking(t, pool, show, "HELD", -time.Hour, "A1")
	r, err := check.Run(context.Background(), check.Config{DatabaseURL: url, ShowIDs: []string{show}, ReconcileInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(byInvariant(r)[loadtest.InvStaleHold]); got != 1 {
		t.Fatalf("got %d stale-hold violations (%v), want 1", got, r.Violations)
	}
}

// refundSeat plants a settled refund of one seat of a paid booking returning amount (of 22500, half the booking),
// as the refund's transaction and the gateway leave it.
func refundSeat(t *testing.T, pool *pgxpool.Pool, show, b, seat string, amount int64) {
	t.Helper()
	exec(t, pool, `DELETE FROM sold_seats WHERE booking_id = $1 AND seat_id = $2`, b, seat)
	exec(t, pool, `UPDATE tickets SET status = 'VOID' WHERE booking_id = $1 AND seat_id = $2`, b, seat)
	exec(t, pool, `INSERT INTO refunds (id, booking_id, show_id, payment_id, seat_ids, seats_amount, percent, amount_due,
		amount, status, updated_at) SELECT $1, $2, $3, p.id, ARRAY[$4], 22500, 50, $5, $5, 'SUCCEEDED', now() - interval '1 hour'
		FROM payments p WHERE p.booking_id = $2`, id("rf_"), b, show, seat, amount)
	exec(t, pool, `UPDATE payments SET refunded_amount = refunded_amount + $2 WHERE booking_id = $1`, b, amount)
	exec(t, pool, `UPDATE bookings SET updated_at = now() - interval '1 hour' WHERE id = $1`, b)
}

// TestPartialRefundThenResaleIsClean: a seat refunded out of a booking that stays CONFIRMED and sold again to
// another fan is one sale, not two, and half its price kept under the policy is no money kept wrongly.
func TestPartialRefundThenResaleIsClean(t *testing.T) {
	pool := pgtest.New(t)
	show := newShow(t, pool)
	b := paid(t, pool, show, "A1", "A2")
	refundSeat(t, pool, show, b, "A1", 11250)
	paid(t, pool, show, "A1")
	r, err := check.Check(context.Background(), pool, nil, check.Config{ShowIDs: []string{show}, ReconcileInterval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Violations) != 0 {
		t.Fatalf("got violations %v, want none", r.Violations)
	}
	// The same refund returning more than the seat cost is money the policy did not promise.
	exec(t, pool, `UPDATE refunds SET amount_due = 30000, amount = 30000 WHERE booking_id = $1`, b)
	exec(t, pool, `UPDATE payments SET refunded_amount = 30000 WHERE booking_id = $1`, b)
	r, err = check.Check(context.Background(), pool, nil, check.Config{ShowIDs: []string{show}, ReconcileInterval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := byInvariant(r); len(got[invariant.RefundAsPromised]) == 0 || len(got) != 1 {
		t.Fatalf("got violations %v, want only %s", r.Violations, invariant.RefundAsPromised)
	}
}
