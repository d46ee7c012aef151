package redis

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/driver"
)

// notifyConfig is the Redis setting that turns keyspace notifications on.
const notifyConfig = "notify-keyspace-events"

// EnsureNotifications makes Redis publish what WatchExpiries listens to: keyevent notifications (E) of expired
// keys (x). It adds the flags that are missing to those already on, never removing one, on every primary of a
// cluster. It reports whether it changed anything. A Redis that refuses CONFIG (managed services often do)
// answers an error: the caller warns, and the reconciler's sweep releases expired holds instead.
func EnsureNotifications(ctx context.Context, rdb redis.UniversalClient) (changed bool, err error) {
	var set atomic.Bool // ForEachMaster calls ensure concurrently
	ensure := func(ctx context.Context, c *redis.Client) error {
		cur, err := c.ConfigGet(ctx, notifyConfig).Result()
		if err != nil {
			return err
		}
		want := withExpiryFlags(cur[notifyConfig])
		if want == cur[notifyConfig] {
			return nil
		}
		set.Store(true)
		return c.ConfigSet(ctx, notifyConfig, want).Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, ensure)
	case *redis.Client:
		err = ensure(ctx, c)
	default:
		// A ring or failover client: ask through the universal interface.
		cur, gerr := rdb.ConfigGet(ctx, notifyConfig).Result()
		if gerr != nil {
			return false, gerr
		}
		if want := withExpiryFlags(cur[notifyConfig]); want != cur[notifyConfig] {
			set.Store(true)
			err = rdb.ConfigSet(ctx, notifyConfig, want).Err()
		}
	}
	return set.Load(), err
}

// withExpiryFlags returns flags with E and x added when missing ("A" stands for every event class, x among them).
func withExpiryFlags(flags string) string {
	if !strings.Contains(flags, "E") {
		flags += "E"
	}
	if !strings.ContainsAny(flags, "xA") {
		flags += "x"
	}
	return flags
}

// KeepNotifications runs EnsureNotifications at once and then every interval until ctx ends: a Redis that
// restarts (or is replaced by an empty one) forgets a CONFIG SET, and without the notifications expired holds
// wait for the reconciler's sweep. It logs when it turns them on, and warns once (until it next succeeds) when
// Redis refuses CONFIG; while Redis is unreachable it says nothing, as readiness already reports that.
func KeepNotifications(ctx context.Context, rdb redis.UniversalClient, interval time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	refused := false
	check := func() {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		changed, err := EnsureNotifications(c, rdb)
		switch {
		case err == nil:
			refused = false
			if changed {
				log.Info("redis keyspace notifications enabled", notifyConfig, "E,x")
			}
		case ctx.Err() != nil, driver.Unavailable(err):
		case !refused:
			refused = true
			log.Warn("redis refused CONFIG SET notify-keyspace-events; expired holds are released by the "+
				"reconciler's sweep instead of at once. Enable keyevent expiry notifications (Ex) in the Redis "+
				"configuration", "err", err)
		}
	}
	every(ctx, interval, check)
}

// every runs fn at once and then every interval until ctx ends: the shape of the package's keep-alive workers,
// which must act at start-up rather than an interval later.
func every(ctx context.Context, interval time.Duration, fn func()) {
	fn()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
