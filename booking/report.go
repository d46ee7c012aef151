package booking

import (
	"context"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/salereport"
)

// SaleReport is a show's after-sale report (shared/salereport): built from the ledger and the queue's record in
// PostgreSQL alone, never from Redis or a replica's meters, so a restart or a Redis loss changes none of it. Once
// the show has started the report is summarised (KeepReports) and served from the summary, which outlives the
// per-fan rows it was built from.
func (s *Catalog) SaleReport(ctx context.Context, showID string) (salereport.Report, error) {
	if _, err := s.operatorShow(ctx, showID); err != nil {
		return salereport.Report{}, err
	}
	r, err := s.store.SaleReport(ctx, showID, s.cfg.Now())
	if err != nil {
		return r, err
	}
	r.Retention = s.retention(r.Retention)
	return r, nil
}

// ReportKeptDays is how long a summarised report is kept at least; nothing deletes one.
const ReportKeptDays = 90

// retention says what is kept of the report and of the rows it was built from.
func (s *Catalog) retention(r salereport.Retention) salereport.Retention {
	days := int(s.cfg.FanRetention / (24 * time.Hour))
	r.FanRetentionDays, r.ReportKeptDays = days, ReportKeptDays
	kept := fmt.Sprintf("The report is kept at least %d days.", ReportKeptDays)
	switch {
	case r.FanRowsDeletedAt != nil:
		r.Note = fmt.Sprintf("Summarised from the durable record at %s, once the show started; the per-fan rows it "+
			"was built from (places in line, admissions) were deleted at %s, %d days later as the operator set. %s",
			stamp(*r.SummarisedAt), stamp(*r.FanRowsDeletedAt), days, kept)
	case r.SummarisedAt != nil:
		r.Note = fmt.Sprintf("Summarised from the durable record at %s, once the show started; the per-fan rows it "+
			"was built from (places in line, admissions) are deleted %d days after that, as the operator set. %s",
			stamp(*r.SummarisedAt), days, kept)
	default:
		r.Note = fmt.Sprintf("Built from the durable record (PostgreSQL) as it stands; summarised once the show "+
			"starts, and the per-fan rows it is built from (places in line, admissions) deleted %d days after that, "+
			"as the operator set. %s", days, kept)
	}
	return r
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// KeepReports is one sweep of the reports' retention: the reports of shows started by now are summarised, and the
// per-fan rows of those summarised more than the retention ago are deleted. Any replica may run it at any time.
func (s *Catalog) KeepReports(ctx context.Context) error {
	now := s.cfg.Now()
	if _, err := s.store.SummariseSales(ctx, now); err != nil {
		return fmt.Errorf("booking: summarise sales: %w", err)
	}
	if _, err := s.store.ForgetFans(ctx, now.Add(-s.cfg.FanRetention)); err != nil {
		return fmt.Errorf("booking: forget fans: %w", err)
	}
	return nil
}
