package booking

import (
	"context"

	"github.com/flashseat/flashseat/shared/salereport"
)

// SaleReport is a show's after-sale report (shared/salereport): built from the ledger and the queue's record in
// PostgreSQL alone, never from Redis or a replica's meters, so a restart or a Redis loss changes none of it.
func (s *Catalog) SaleReport(ctx context.Context, showID string) (salereport.Report, error) {
	if _, err := s.operatorShow(ctx, showID); err != nil {
		return salereport.Report{}, err
	}
	r, err := s.store.SaleReport(ctx, showID, s.cfg.Now())
	if err != nil {
		return r, err
	}
	r.Retention = salereport.Retention{Note: retentionNote}
	return r, nil
}

// retentionNote says what the record keeps, until retention (docs/ARCHITECTURE.md) lets operators choose.
const retentionNote = "Built from the durable record (PostgreSQL). Admissions are kept a day after they expire; " +
	"joins, refusals, bookings and payments until deleted."
