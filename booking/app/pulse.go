package app

import (
	"context"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/pulse"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
)

// publishPulse reports this replica's last seconds (shared/pulse) every second until ctx ends, for the edge's
// autotune: the holds' p99, the share of 5xx and 503 answers, the payment breaker's state.
func publishPulse(ctx context.Context, rdb goredis.UniversalClient, ns string, w *pulse.Window, pays *booking.Checkout, log *slog.Logger) {
	replica := booking.NewID("")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		breaker := "closed"
		if pays != nil {
			if st := pays.GatewayState(); st != "" {
				breaker = st
			}
		}
		err := pulseredis.Publish(ctx, rdb, ns, w.Report(replica, breaker, time.Now()))
		if err != nil && !failing && ctx.Err() == nil {
			log.Warn("booking: cannot publish the pulse for autotune", "err", err)
		}
		failing = err != nil
	}
}
