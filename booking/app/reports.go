package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/flashseat/flashseat/booking"
)

// keepReports runs the after-sale reports' retention (booking.Catalog.KeepReports: summarise the sales that are
// over, delete the per-fan rows past REPORT_FAN_RETENTION) at start and then every every, until ctx ends. Every
// replica runs it; the steps are idempotent.
func keepReports(ctx context.Context, svc *booking.Service, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := svc.KeepReports(ctx); err != nil && ctx.Err() == nil {
			log.Warn("after-sale reports: retention sweep failed; tried again later", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
