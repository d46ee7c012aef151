// Package redis carries booking's pulse reports (shared/pulse) through Redis: each replica SETs its latest report
// with a short expiry under its own key and names itself in one sorted set; readers take every report of the
// last few seconds. A replica that stops reporting drops out within the expiry.
package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/pulse"
)

// The keys, under a namespace (PULSE_NAMESPACE, default DefaultNamespace; tests sharing a Redis take their own):
// one sorted set of replicas by their last report, one key per replica's report. Not a show's keys: booking's
// health is the whole service's. On a cluster each lives on its own slot; nothing needs them together.
const (
	DefaultNamespace = "flashseat:pulse"
	replicasKey      = ":replicas"
	reportKey        = ":report:"
	// fresh is how old a report may be and still count.
	fresh = 5 * time.Second
)

// Publish stores r as its replica's latest report.
func Publish(ctx context.Context, rdb goredis.UniversalClient, ns string, r pulse.Report) error {
	b, _ := json.Marshal(r) // plain fields always marshal
	if err := rdb.Set(ctx, ns+reportKey+r.Replica, b, fresh).Err(); err != nil {
		return fmt.Errorf("pulse/redis: publish: %w", err)
	}
	if err := rdb.ZAdd(ctx, ns+replicasKey, goredis.Z{Score: float64(r.At.UnixMilli()), Member: r.Replica}).Err(); err != nil {
		return fmt.Errorf("pulse/redis: publish: %w", err)
	}
	return nil
}

// Read returns the reports made within the last few seconds before now, one per replica, and forgets replicas
// silent for a minute.
func Read(ctx context.Context, rdb goredis.UniversalClient, ns string, now time.Time) ([]pulse.Report, error) {
	_ = rdb.ZRemRangeByScore(ctx, ns+replicasKey, "-inf", strconv.FormatInt(now.Add(-time.Minute).UnixMilli(), 10)).Err()
	ids, err := rdb.ZRangeByScore(ctx, ns+replicasKey, &goredis.ZRangeBy{
		Min: strconv.FormatInt(now.Add(-fresh).UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("pulse/redis: read: %w", err)
	}
	var out []pulse.Report
	for _, id := range ids {
		b, err := rdb.Get(ctx, ns+reportKey+id).Bytes()
		if err == goredis.Nil {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pulse/redis: read: %w", err)
		}
		var r pulse.Report
		if json.Unmarshal(b, &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}
