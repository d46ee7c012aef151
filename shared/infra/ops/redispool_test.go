package ops_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/ops"
)

func redisOptions(t *testing.T) *goredis.Options {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// A pool of one connection held by a blocking command: the next command's wait shows as pending while it waits,
// as a timeout when the pool gives up on it, and as a wait, with its time, when it gets the connection. A wait
// that its caller's deadline ends is no timeout (go-redis counts only its own): pending is what shows it.
func TestRedisPoolTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opt := redisOptions(t)
	// No retries: go-redis retries a command its pool timed out, and each try would count.
	opt.PoolSize, opt.PoolTimeout, opt.MaxRetries = 1, 2*time.Second, -1
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	other := goredis.NewClient(redisOptions(t))
	t.Cleanup(func() { _ = other.Close() })
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	key := "flashseat:opstest:" + hex.EncodeToString(b)
	t.Cleanup(func() { other.Del(context.Background(), key) })

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ops.RedisPool("test", rdb))
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := value(t, reg, "test_redis_pool_misses_total"); got != 1 {
		t.Fatalf("misses after the first command = %v, want 1 (the connection dialled)", got)
	}

	popped := make(chan error, 1)
	go func() { popped <- rdb.BLPop(ctx, time.Minute, key).Err() }()
	waitFor(t, reg, "test_redis_pool_idle_connections", 0) // the blocking pop holds the only connection

	if err := rdb.Ping(ctx).Err(); !errors.Is(err, goredis.ErrPoolTimeout) {
		t.Fatalf("command on a busy pool: %v, want %v", err, goredis.ErrPoolTimeout)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := rdb.Ping(short).Err()
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("command with a short deadline on a busy pool: %v, want %v", err, context.DeadlineExceeded)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP test_redis_pool_timeouts_total Waits for a Redis pool connection that gave up at the pool timeout (not those the caller's own deadline ended first: see pending_requests).
# TYPE test_redis_pool_timeouts_total counter
test_redis_pool_timeouts_total{pool="main"} 1
test_redis_pool_timeouts_total{pool="pipeline"} 0
`), "test_redis_pool_timeouts_total"); err != nil {
		t.Fatal(err)
	}

	pinged := make(chan error, 1)
	go func() { pinged <- rdb.Ping(ctx).Err() }()
	waitFor(t, reg, "test_redis_pool_pending_requests", 1)
	// Pending from the moment the command asks for a connection: give it the moment to start waiting, well
	// inside the pool's 2 s, before the pop lets go of the connection.
	time.Sleep(100 * time.Millisecond)
	if err := other.LPush(ctx, key, "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-popped; err != nil {
		t.Fatalf("blocking pop: %v", err)
	}
	if err := <-pinged; err != nil {
		t.Fatalf("command that waited: %v", err)
	}
	if got := value(t, reg, "test_redis_pool_waits_total"); got != 1 {
		t.Fatalf("waits = %v, want 1", got)
	}
	if got := value(t, reg, "test_redis_pool_wait_seconds_total"); got < 0.1 {
		t.Fatalf("time waited = %vs, want at least the 0.1 s the pop held the connection", got)
	}
	for name, want := range map[string]float64{"test_redis_pool_pending_requests": 0,
		"test_redis_pool_connections": 1, "test_redis_pool_idle_connections": 1, "test_redis_pool_timeouts_total": 1} {
		if got := value(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// The names follow Prometheus's conventions (counters end in _total, units spelled out).
func TestRedisPoolLint(t *testing.T) {
	t.Parallel()
	rdb := goredis.NewClient(redisOptions(t))
	t.Cleanup(func() { _ = rdb.Close() })
	problems, err := testutil.CollectAndLint(ops.RedisPool("edge", rdb))
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
}

// value is the main pool's series name as the registry gathers it.
func value(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" && l.GetValue() == "main" {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{pool=\"main\"} not gathered", name)
	return 0
}

// waitFor waits until the main pool's series name reads want.
func waitFor(t *testing.T, reg prometheus.Gatherer, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for value(t, reg, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, never %v", name, value(t, reg, name), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
