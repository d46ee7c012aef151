package check

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/loadtest"
)

// paymentInvariants are booking/invariant's names, reported as they are.
var paymentInvariants = []string{invariant.ConfirmedPaid, invariant.SeatOnce, invariant.NoMoneyLeft,
	invariant.RefundAsPromised, invariant.ResoldOnce}

// payments judges the money with the payments engineer's checker rather than a second copy of its queries:
// every CONFIRMED booking captured exactly once with one ticket per seat; no money left on EXPIRED, CANCELLED or
// HELD bookings (so every captured payment belongs to a CONFIRMED booking or has its refund); every refund
// returned what the show's refund policy promised, and no refunded seat is still sold; every sale on the exchange
// paid its seller exactly once. Money still settling within cfg.PaymentGrace is left alone.
func payments(ctx context.Context, pool *pgxpool.Pool, cfg Config, r *Result) error {
	vs, err := invariant.Check(ctx, pool, invariant.Options{ShowIDs: cfg.ShowIDs, Grace: cfg.PaymentGrace})
	if err != nil {
		return err
	}
	for _, v := range vs {
		r.Violations = append(r.Violations, loadtest.Violation{Invariant: v.Invariant, Detail: v.String()})
	}
	r.Checked = append(r.Checked, paymentInvariants...)
	return nil
}
