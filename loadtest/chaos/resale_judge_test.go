package chaos_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// What the exchange did in the storm, as the report shows it and the test judges it.

// resaleLedger is the exchange as PostgreSQL has it once the money settled.
type resaleLedger struct {
	listings, sold, settled, withdrawn, listed int
	sameCode                                   []string // sold listings whose buyer's ticket kept the seller's code
}

// readResales reads the exchange's show's listings: each SOLD one must have its payout settled (a SUCCEEDED
// refund of the seller's payment for the price less the fee), the seller's ticket RESOLD and the buyer's a new
// code.
func readResales(ctx context.Context, pool *pgxpool.Pool, show string) (resaleLedger, error) {
	var r resaleLedger
	err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE l.status = 'SOLD'),
		count(*) FILTER (WHERE l.status = 'SOLD' AND EXISTS (SELECT 1 FROM refunds f WHERE f.listing_id = l.id
			AND f.status = 'SUCCEEDED' AND f.amount = l.price - l.fee)),
		count(*) FILTER (WHERE l.status = 'WITHDRAWN'), count(*) FILTER (WHERE l.status = 'LISTED')
		FROM resale_listings l WHERE l.show_id = $1`, show).Scan(&r.listings, &r.sold, &r.settled, &r.withdrawn, &r.listed)
	if err != nil {
		return r, err
	}
	rows, err := pool.Query(ctx, `SELECT l.id FROM resale_listings l JOIN tickets s ON s.id = l.ticket_id
		LEFT JOIN tickets b ON b.booking_id = l.buyer_booking_id AND b.seat_id = l.seat_id
		WHERE l.show_id = $1 AND l.status = 'SOLD' AND (s.status <> 'RESOLD' OR b.id IS NULL OR b.code = s.code)`, show)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return r, err
		}
		r.sameCode = append(r.sameCode, id)
	}
	return r, rows.Err()
}

// during counts the trading calls in flight while each fault was, from its injection to its recovery.
func (x *exchange) during(faults []*fault) []int {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]int, len(faults))
	for i, f := range faults {
		for _, c := range x.calls {
			if exchangeAttempts[c.what] && !c.began.After(f.Recovered) && !c.ended.Before(f.At) {
				out[i]++
			}
		}
	}
	return out
}

// markdown is the exchange's paragraph of the report.
func (x *exchange) markdown(l resaleLedger) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	outcomes := map[string]int{}
	for _, c := range x.calls {
		if exchangeAttempts[c.what] || c.what == "pay" {
			outcomes[c.what+" "+c.outcome]++
		}
	}
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, fmt.Sprintf("%s: %d", k, outcomes[k]))
	}
	sort.Strings(keys)
	n := x.n
	return fmt.Sprintf("The exchange, on a show of its own (resale at %g of face value, %g%% fee; buyers' pay mix %s): "+
		"%d sellers listed %d times (one above the cap, refused %d), withdrew %d (%d refused while a buyer held it); "+
		"%d buyers held %d listings (%d lost the race, %d lost an answer), %d paid and CONFIRMED, %d declined first, "+
		"%d gave up on a failing card, %d expired, %d refused at payment. In PostgreSQL: %d listings, %d SOLD (%d payouts settled), "+
		"%d withdrawn, %d still listed. Answers: %s.\n", resalePolicy.MaxPriceRatio, resalePolicy.FeePercent, buyerPay,
		n.sellers, n.listed, n.aboveCap, n.withdrawn, n.withdrawHeld, n.buyers, n.held, n.lostRace, n.lostAnswer,
		n.confirmed, n.declined, n.gaveUp, n.expired, n.refusedAtPay, l.listings, l.sold, l.settled, l.withdrawn, l.listed,
		strings.Join(keys, ", "))
}

// judgeExchange: no answer on the exchange the contract forbids, and the listing above the cap refused; sales
// made, through the faults, each with its payout settled and the buyer's ticket under a new code. The money of
// those sales is the store checker's and the gateway ledger's to judge, with the rest of the run's.
func judgeExchange(t *testing.T, ex *exchange, l resaleLedger, rows []faultRow, set resaleSettings) {
	t.Helper()
	if n := len(ex.problems); n > 0 {
		t.Errorf("the exchange: %d answers the contract does not allow, among them: %s", n,
			strings.Join(first(ex.problems, 10), "; "))
	}
	if ex.n.aboveCap != 1 {
		t.Errorf("the listing above the cap was refused with 422 price-above-cap %d times, want 1", ex.n.aboveCap)
	}
	if l.settled < set.minSold {
		t.Errorf("the exchange sold %d listings with their payouts settled, want at least %d", l.settled, set.minSold)
	}
	if l.settled != l.sold {
		t.Errorf("%d listings SOLD, but only %d of their payouts settled for the price less the fee", l.sold, l.settled)
	}
	if len(l.sameCode) > 0 {
		t.Errorf("listings sold without the seller's ticket RESOLD and a new code for the buyer's: %s",
			strings.Join(first(l.sameCode, 10), ", "))
	}
	trading := 0
	for _, r := range rows {
		trading += r.trading
	}
	if trading == 0 {
		t.Errorf("no listing nor purchase was tried while a fault was in progress: the exchange was not in the storm")
	}
}
