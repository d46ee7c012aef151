package redis_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// syncBuffer is a log sink safe for the watcher's goroutine and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func notifyFlags(t *testing.T, rdb *goredis.Client) string {
	t.Helper()
	v, err := rdb.ConfigGet(context.Background(), "notify-keyspace-events").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v["notify-keyspace-events"]
}

// waitFlags waits until Redis's notify-keyspace-events has expiry keyevents on and every flag of keep.
func waitFlags(t *testing.T, rdb *goredis.Client, keep string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = notifyFlags(t, rdb)
		ok := strings.Contains(got, "E") && strings.ContainsAny(got, "xA")
		for _, f := range keep {
			ok = ok && strings.ContainsRune(got, f)
		}
		if ok {
			return
		}
	}
	t.Fatalf("notify-keyspace-events = %q, want E, x and %q", got, keep)
}

// TestKeepNotifications: on a private Redis (the machine's is shared with other tests) booking turns keyevent
// expiry notifications on at start, again when they are switched off, and again when Redis restarts empty; it
// keeps the flags someone else set.
func TestKeepNotifications(t *testing.T) {
	t.Parallel()
	srv := storetest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if got := notifyFlags(t, rdb); got != "" {
		t.Fatalf("a fresh redis-server has notifications %q, want none", got)
	}
	logs := &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redis.KeepNotifications(ctx, rdb, 50*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	waitFlags(t, rdb, "")

	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "Kg").Err(); err != nil {
		t.Fatal(err)
	}
	waitFlags(t, rdb, "Kg")

	srv.Kill()
	time.Sleep(150 * time.Millisecond) // a few checks find Redis unreachable
	srv.Start()
	waitFlags(t, rdb, "")
	cancel()
	<-done
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("warned while Redis allowed CONFIG or was down:\n%s", logs)
	}
	if n := strings.Count(logs.String(), "keyspace notifications enabled"); n < 3 {
		t.Fatalf("logged enabling %d times, want 3 (start, switched off, restarted):\n%s", n, logs)
	}
}

// TestKeepNotificationsRefused: a Redis that refuses CONFIG (as managed services do) gets one warning, not one per
// check, and nothing breaks.
func TestKeepNotificationsRefused(t *testing.T) {
	t.Parallel()
	srv := storetest.StartRedis(t, "--rename-command", "CONFIG", "")
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redis.KeepNotifications(ctx, rdb, 20*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "notify-keyspace-events") {
		t.Fatalf("%d warnings, want exactly one naming notify-keyspace-events:\n%s", n, logs)
	}
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis after the refusals: %v", err)
	}
}
