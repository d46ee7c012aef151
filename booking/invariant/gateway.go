package invariant

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// GatewayAgrees names the violations of CheckGateway.
const GatewayAgrees = "gateway-agrees"

// Money is one payment intent as the gateway's own books have it (for the bundled simulator, sim.FetchLedger).
type Money struct {
	IntentID   string
	BookingID  string // from the intent's metadata
	Capturable int64  // authorized, not captured
	Received   int64  // captured
	Refunded   int64
}

// CheckGateway compares the gateway's books with the ledger, intent by intent, for intents of bookings in scope:
//
//   - money authorized at the gateway is money the ledger is still working on (an attempt in flight, or the
//     payment of a sale whose capture is pending); otherwise it is held from the fan for nothing;
//   - money captured and not refunded is exactly what the ledger keeps of a CONFIRMED or REFUNDED booking's
//     payment (captured less its refunds, which the show's refund policy priced), unless a refund is under way;
//     for any other booking it must have been refunded in full.
//
// Run it once activity has stopped (or with a Grace) so that money in motion is not reported.
func CheckGateway(ctx context.Context, pool *pgxpool.Pool, books []Money, opts Options) ([]Violation, error) {
	shows := opts.ShowIDs
	if shows == nil {
		shows = []string{}
	}
	n := len(books)
	ids, bookings := make([]string, n), make([]string, n)
	capturable, received, refunded := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, m := range books {
		ids[i], bookings[i] = m.IntentID, m.BookingID
		capturable[i], received[i], refunded[i] = m.Capturable, m.Received, m.Refunded
	}
	rows, err := pool.Query(ctx, `
		WITH g AS (SELECT * FROM unnest($3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
			AS g(intent_id, booking_id, capturable, received, refunded))
		SELECT b.id, format('intent %s: capturable %s, captured %s, refunded %s; booking %s, attempt %s, payment %s captured %s',
			g.intent_id, g.capturable, g.received, g.refunded, b.status, coalesce(a.state, 'none'),
			coalesce(p.status, 'none'), coalesce(p.captured_amount, 0))
		FROM g
		LEFT JOIN payment_attempts a ON a.intent_id = g.intent_id
		LEFT JOIN payments p ON p.intent_id = g.intent_id
		JOIN bookings b ON b.id = coalesce(a.booking_id, g.booking_id)
		WHERE `+scope+`
		AND ((g.capturable > 0 AND coalesce(a.state, '') NOT IN ('STARTED', 'PENDING', 'AUTHORIZED', 'VOIDING')
				AND coalesce(p.status, '') <> 'AUTHORIZED')
			OR (g.received > 0 AND CASE
				WHEN p.id IS NOT NULL AND EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id
					AND r.status = 'PENDING') THEN false
				WHEN b.status IN ('CONFIRMED', 'REFUNDED') AND p.id IS NOT NULL
					THEN g.received - g.refunded <> p.captured_amount - p.refunded_amount
				WHEN p.status = 'REFUNDING' OR a.state = 'REFUNDING' THEN false
				ELSE g.received - g.refunded <> 0 END))
		ORDER BY b.id`, shows, opts.Grace.Seconds(), ids, bookings, capturable, received, refunded)
	if err != nil {
		return nil, fmt.Errorf("invariant %s: %w", GatewayAgrees, err)
	}
	defer rows.Close()
	var out []Violation
	for rows.Next() {
		var v Violation
		if err := rows.Scan(&v.BookingID, &v.Detail); err != nil {
			return out, fmt.Errorf("invariant %s: %w", GatewayAgrees, err)
		}
		v.Invariant = GatewayAgrees
		out = append(out, v)
	}
	return out, rows.Err()
}
