package ops

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
)

// redisPool reads a go-redis client's connection pool statistics at scrape time and exports them under the
// service's prefix: a command that failed with "context deadline exceeded" then tells whether it waited for a
// pool connection (waits, pending requests, timeouts rise) or for Redis itself (they do not).
type redisPool struct {
	rdb    interface{ PoolStats() *goredis.PoolStats }
	series []poolSeries
}

// poolSeries is one exported figure of a pool's statistics.
type poolSeries struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(s *goredis.PoolStats) float64
}

// RedisPool returns the collector of rdb's pool statistics (a *redis.Client's, or a *redis.ClusterClient's summed
// over its nodes), named prefix_redis_pool_... (edge_redis_pool_timeouts_total, booking_redis_pool_connections).
// Each series has a label pool: "main", the pool every command waits for (REDIS_POOL_SIZE connections), or
// "pipeline", go-redis's small pool for pipelines, which never waits: a pipeline that finds it full runs on the
// main pool.
func RedisPool(prefix string, rdb interface{ PoolStats() *goredis.PoolStats }) prometheus.Collector {
	p := prefix + "_redis_pool_"
	pool := []string{"pool"}
	series := func(name, help string, kind prometheus.ValueType, value func(s *goredis.PoolStats) float64) poolSeries {
		return poolSeries{desc: prometheus.NewDesc(p+name, help, pool, nil), kind: kind, value: value}
	}
	return redisPool{rdb: rdb, series: []poolSeries{
		series("hits_total", "Connections handed out from the Redis pool's idle ones.",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 { return float64(s.Hits) }),
		series("misses_total", "Connections the Redis pool had to dial because none was idle.",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 { return float64(s.Misses) }),
		series("timeouts_total", "Waits for a Redis pool connection that gave up at the pool timeout "+
			"(not those the caller's own deadline ended first: see pending_requests).",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 { return float64(s.Timeouts) }),
		series("waits_total", "Commands that found every Redis pool connection busy, waited and got one.",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 { return float64(s.WaitCount) }),
		series("wait_seconds_total", "Time those commands spent waiting for a Redis pool connection.",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 {
				return (time.Duration(s.WaitDurationNs)).Seconds()
			}),
		series("pending_requests", "Commands waiting for a Redis pool connection now, for a free turn or a dial "+
			"(a single Redis only: the cluster client does not add its nodes' up).",
			prometheus.GaugeValue, func(s *goredis.PoolStats) float64 { return float64(s.PendingRequests) }),
		series("connections", "Open Redis connections in the pool, busy or idle.",
			prometheus.GaugeValue, func(s *goredis.PoolStats) float64 { return float64(s.TotalConns) }),
		series("idle_connections", "Idle Redis connections in the pool.",
			prometheus.GaugeValue, func(s *goredis.PoolStats) float64 { return float64(s.IdleConns) }),
		series("stale_connections_total", "Redis connections the pool closed as stale (idle or open too long, "+
			"or found broken).",
			prometheus.CounterValue, func(s *goredis.PoolStats) float64 { return float64(s.StaleConns) }),
	}}
}

func (r redisPool) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range r.series {
		ch <- s.desc
	}
}

func (r redisPool) Collect(ch chan<- prometheus.Metric) {
	stats := r.rdb.PoolStats()
	r.collect(ch, "main", stats)
	if stats.PipelineStats != nil {
		r.collect(ch, "pipeline", (*goredis.PoolStats)(stats.PipelineStats))
	}
}

func (r redisPool) collect(ch chan<- prometheus.Metric, pool string, stats *goredis.PoolStats) {
	for _, s := range r.series {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(stats), pool)
	}
}
