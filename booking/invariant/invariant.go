// Package invariant checks, from the ledger alone, that money and seats agree: the properties the pay saga, its
// recovery worker, refunds and check-in must keep whatever crashed or raced. Tests call it after every race; the
// load test calls it after a run. It reads Postgres only and changes nothing.
//
// The invariants:
//
//   - confirmed-paid: every CONFIRMED booking has exactly one payment, captured for the booking's total, and one
//     live ticket (VALID, CHECKED_IN or LISTED, whoever holds it after a transfer) per seat not refunded;
//   - seat-once: no seat of a show is sold twice, and no seat has two live tickets;
//   - no-money-left: EXPIRED and CANCELLED bookings (and HELD ones) have no payment and no attempt that still
//     holds money: every attempt that reached the gateway ended voided, refunded, declined or rejected;
//   - refund-as-promised: every refund (of some or all of a booking's seats) returned exactly the amount its
//     policy promised the fan (never more than the seats cost), no seat is refunded twice, a refunded seat is out
//     of the ledger, the payment's refunded amount is the sum of its refunds, and a REFUNDED booking has every
//     seat refunded, its payment REFUNDED and no live tickets. The money kept for a refunded seat is thus exactly
//     what the show's refund policy keeps (its percentage and fee), and nothing else;
//   - resold-once: a listing SOLD on the exchange has exactly one payout, a refund of the seller's payment for
//     the price less the fee, its buyer's booking was confirmed at that price, and the seller's ticket is RESOLD;
//     a listing still LISTED has its ticket LISTED, and a LISTED or RESOLD ticket has its listing. A payout is a
//     refund, so refund-as-promised holds the gateway to it and the seat-once rules hold the seat to one ticket.
//
// Money in motion is not a violation while it is young: Options.Grace leaves alone rows touched within it (a
// capture the worker is about to retry, a void on its way), so the checker can run while traffic settles.
package invariant

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Names of the invariants, as Violation.Invariant carries them.
const (
	ConfirmedPaid    = "confirmed-paid"
	SeatOnce         = "seat-once"
	NoMoneyLeft      = "no-money-left"
	RefundAsPromised = "refund-as-promised"
	ResoldOnce       = "resold-once"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	BookingID string // empty for a violation about a seat
	Detail    string
}

func (v Violation) String() string {
	if v.BookingID == "" {
		return v.Invariant + ": " + v.Detail
	}
	return v.Invariant + ": booking " + v.BookingID + ": " + v.Detail
}

// Options narrow a check.
type Options struct {
	// ShowIDs limits the check to these shows; empty checks every show.
	ShowIDs []string
	// Grace ignores bookings that, or whose payment rows, changed within it (money settling). Zero checks
	// everything, which is right once all activity has stopped.
	Grace time.Duration
}

// Check runs every invariant and returns the violations found (nil when there are none). An error means the
// check could not run, not that an invariant failed.
func Check(ctx context.Context, pool *pgxpool.Pool, opts Options) ([]Violation, error) {
	var out []Violation
	shows := opts.ShowIDs
	if shows == nil {
		shows = []string{} // a nil slice would travel as NULL, which matches nothing
	}
	for _, q := range queries {
		rows, err := pool.Query(ctx, q.sql, shows, opts.Grace.Seconds())
		if err != nil {
			return out, fmt.Errorf("invariant %s: %w", q.invariant, err)
		}
		for rows.Next() {
			var booking, detail string
			if err := rows.Scan(&booking, &detail); err != nil {
				rows.Close()
				return out, fmt.Errorf("invariant %s: %w", q.invariant, err)
			}
			out = append(out, Violation{Invariant: q.invariant, BookingID: booking, Detail: detail})
		}
		if err := rows.Err(); err != nil {
			return out, fmt.Errorf("invariant %s: %w", q.invariant, err)
		}
	}
	return out, nil
}

// Each query takes $1 (show ids, empty for all) and $2 (grace in seconds) and returns (booking id, detail).
// scope selects the bookings in view: of the chosen shows, and quiet for the grace period.
const scope = `(cardinality($1::text[]) = 0 OR b.show_id = ANY($1::text[]))
	AND b.updated_at <= now() - make_interval(secs => $2::float8)
	AND NOT EXISTS (SELECT 1 FROM payment_attempts q WHERE q.booking_id = b.id
		AND q.updated_at > now() - make_interval(secs => $2::float8))
	AND NOT EXISTS (SELECT 1 FROM payments q WHERE q.booking_id = b.id
		AND q.updated_at > now() - make_interval(secs => $2::float8))
	AND NOT EXISTS (SELECT 1 FROM refunds q WHERE q.booking_id = b.id
		AND q.updated_at > now() - make_interval(secs => $2::float8))`

var queries = []struct {
	invariant string
	sql       string
}{
	{ConfirmedPaid, `
		SELECT b.id, format('payments=%s captured=%s of %s status=%s', count(p.id),
			coalesce(max(p.captured_amount), 0), b.total_amount, coalesce(max(p.status), 'none'))
		FROM bookings b LEFT JOIN payments p ON p.booking_id = b.id
		WHERE b.status = 'CONFIRMED' AND ` + scope + `
		GROUP BY b.id, b.total_amount
		HAVING count(p.id) <> 1 OR max(p.status) <> 'CAPTURED' OR max(p.captured_amount) <> b.total_amount`},
	{ConfirmedPaid, `
		SELECT b.id, format('seats %s but live tickets for %s', b.seat_ids,
			coalesce((SELECT array_agg(t.seat_id ORDER BY t.seat_id) FROM tickets t
				WHERE t.booking_id = b.id AND t.status IN ('VALID', 'CHECKED_IN', 'LISTED')), '{}'))
		FROM bookings b
		WHERE b.status = 'CONFIRMED' AND ` + scope + `
		AND (SELECT coalesce(array_agg(t.seat_id ORDER BY t.seat_id), '{}') FROM tickets t
				WHERE t.booking_id = b.id AND t.status IN ('VALID', 'CHECKED_IN', 'LISTED'))
			<> (SELECT coalesce(array_agg(s ORDER BY s), '{}') FROM unnest(b.seat_ids) s
				WHERE NOT EXISTS (SELECT 1 FROM refunds r WHERE r.booking_id = b.id AND s = ANY(r.seat_ids)))`},
	{SeatOnce, `
		SELECT '', format('show %s seat %s sold %s times: %s', s.show_id, s.seat_id, count(*),
			string_agg(s.booking_id, ','))
		FROM sold_seats s
		WHERE cardinality($1::text[]) = 0 OR s.show_id = ANY($1::text[])
		GROUP BY s.show_id, s.seat_id HAVING count(*) > 1 AND $2::float8 >= 0`},
	{SeatOnce, `
		SELECT '', format('show %s seat %s has %s live tickets: %s', t.show_id, t.seat_id, count(*),
			string_agg(t.id, ','))
		FROM tickets t
		WHERE t.status IN ('VALID', 'CHECKED_IN', 'LISTED') AND (cardinality($1::text[]) = 0 OR t.show_id = ANY($1::text[]))
		GROUP BY t.show_id, t.seat_id HAVING count(*) > 1 AND $2::float8 >= 0`},
	{SeatOnce, `
		SELECT b.id, format('booking is %s but seat %s is in the ledger under it', b.status, s.seat_id)
		FROM sold_seats s JOIN bookings b ON b.id = s.booking_id
		WHERE b.status <> 'CONFIRMED' AND ` + scope},
	{NoMoneyLeft, `
		SELECT b.id, format('booking is %s but attempt %s is %s (intent %s)', b.status, a.id, a.state,
			coalesce(a.intent_id, 'unknown'))
		FROM bookings b JOIN payment_attempts a ON a.booking_id = b.id
		WHERE b.status IN ('EXPIRED', 'CANCELLED', 'HELD')
		AND a.state IN ('AUTHORIZED', 'CONFIRMED', 'VOIDING', 'REFUNDING', 'STARTED', 'PENDING')
		AND ` + scope},
	{NoMoneyLeft, `
		SELECT b.id, format('booking is %s but has payment %s (%s)', b.status, p.id, p.status)
		FROM bookings b JOIN payments p ON p.booking_id = b.id
		WHERE b.status IN ('EXPIRED', 'CANCELLED', 'HELD', 'PAYMENT_PENDING') AND ` + scope},
	{NoMoneyLeft, `
		SELECT b.id, format('attempt %s of a %s booking holds money: %s', a.id, b.status, a.state)
		FROM bookings b JOIN payment_attempts a ON a.booking_id = b.id
		WHERE b.status IN ('CONFIRMED', 'REFUNDED') AND a.state IN ('AUTHORIZED', 'VOIDING', 'REFUNDING')
		AND ` + scope},
	{RefundAsPromised, `
		SELECT b.id, format('refund %s of %s is %s: returned %s of %s due (the seats cost %s)', r.id, r.seat_ids,
			r.status, r.amount, r.amount_due, r.seats_amount)
		FROM refunds r JOIN bookings b ON b.id = r.booking_id
		WHERE ` + scope + `
		AND (r.status <> 'SUCCEEDED' OR r.amount <> r.amount_due OR r.amount_due > r.seats_amount OR r.amount_due < 0)`},
	{RefundAsPromised, `
		SELECT b.id, format('seat %s refunded %s times', s, count(*))
		FROM refunds r JOIN bookings b ON b.id = r.booking_id, unnest(r.seat_ids) s
		WHERE ` + scope + `
		GROUP BY b.id, s HAVING count(*) > 1`},
	{RefundAsPromised, `
		SELECT b.id, format('seat %s was refunded (%s) but is still sold under the booking', s.seat_id, r.id)
		FROM sold_seats s JOIN bookings b ON b.id = s.booking_id
		JOIN refunds r ON r.booking_id = b.id AND s.seat_id = ANY(r.seat_ids)
		WHERE ` + scope},
	{RefundAsPromised, `
		SELECT b.id, format('payment %s (%s) refunded %s, its refunds %s', p.id, p.status, p.refunded_amount,
			(SELECT coalesce(sum(r.amount), 0) FROM refunds r WHERE r.payment_id = p.id))
		FROM bookings b JOIN payments p ON p.booking_id = b.id
		WHERE b.status IN ('CONFIRMED', 'REFUNDED') AND ` + scope + `
		AND (p.refunded_amount <> (SELECT coalesce(sum(r.amount), 0) FROM refunds r WHERE r.payment_id = p.id)
			OR (b.status = 'REFUNDED') <> (p.status = 'REFUNDED'))`},
	{RefundAsPromised, `
		SELECT b.id, format('refunded booking of seats %s: refunded %s, payment %s captured %s of %s',
			b.seat_ids, coalesce((SELECT array_agg(s ORDER BY s) FROM refunds r, unnest(r.seat_ids) s
				WHERE r.booking_id = b.id), '{}'), coalesce(p.id, 'missing'), coalesce(p.captured_amount, 0),
			b.total_amount)
		FROM bookings b LEFT JOIN payments p ON p.booking_id = b.id
		WHERE b.status = 'REFUNDED' AND ` + scope + `
		AND (p.id IS NULL OR p.captured_amount <> b.total_amount
			OR (SELECT array_agg(s ORDER BY s) FROM refunds r, unnest(r.seat_ids) s WHERE r.booking_id = b.id)
				IS DISTINCT FROM (SELECT array_agg(s ORDER BY s) FROM unnest(b.seat_ids) s))`},
	{RefundAsPromised, `
		SELECT b.id, format('refunded booking still has %s live tickets', count(t.id))
		FROM bookings b JOIN tickets t ON t.booking_id = b.id AND t.status IN ('VALID', 'CHECKED_IN', 'LISTED')
		WHERE b.status = 'REFUNDED' AND ` + scope + `
		GROUP BY b.id`},
	{ResoldOnce, `
		SELECT b.id, format('listing %s sold at %s (fee %s): %s payouts due %s, buyer %s %s at %s, ticket %s', l.id,
			l.price, l.fee, (SELECT count(*) FROM refunds r WHERE r.listing_id = l.id),
			(SELECT string_agg(r.amount_due::text, ',') FROM refunds r WHERE r.listing_id = l.id),
			coalesce(bb.id, 'none'), coalesce(bb.status, 'none'), coalesce(bb.total_amount, 0), t.status)
		FROM resale_listings l JOIN bookings b ON b.id = l.booking_id JOIN tickets t ON t.id = l.ticket_id
		LEFT JOIN bookings bb ON bb.id = l.buyer_booking_id
		WHERE l.status = 'SOLD' AND ` + scope + `
		AND ((SELECT count(*) FROM refunds r WHERE r.listing_id = l.id AND r.booking_id = l.booking_id
				AND r.amount_due = l.price - l.fee AND l.seat_id = ALL(r.seat_ids)) <> 1
			OR (SELECT count(*) FROM refunds r WHERE r.listing_id = l.id) <> 1
			OR bb.id IS NULL OR bb.status NOT IN ('CONFIRMED', 'REFUNDED') OR bb.total_amount <> l.price
			OR t.status <> 'RESOLD')`},
	{ResoldOnce, `
		SELECT b.id, format('ticket %s is %s, its listings %s', t.id, t.status,
			coalesce((SELECT string_agg(l.id || ' ' || l.status, ',') FROM resale_listings l WHERE l.ticket_id = t.id), 'none'))
		FROM tickets t JOIN bookings b ON b.id = t.booking_id
		WHERE ` + scope + `
		AND ((t.status = 'LISTED') <> EXISTS (SELECT 1 FROM resale_listings l WHERE l.ticket_id = t.id AND l.status = 'LISTED')
			OR (t.status = 'RESOLD') <> EXISTS (SELECT 1 FROM resale_listings l WHERE l.ticket_id = t.id AND l.status = 'SOLD'))`},
}
