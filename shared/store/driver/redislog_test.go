package driver_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/store/driver"
	"github.com/flashseat/flashseat/shared/store/storetest"
)

// syncBuffer is a log destination the redis client's goroutines and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogRedisOnceWhileDown: thirty commands to a Redis that is down make go-redis report thirty failed dials; the
// service's log gets one warning.
func TestLogRedisOnceWhileDown(t *testing.T) {
	var out syncBuffer
	driver.LogRedis(slog.New(slog.NewTextHandler(&out, nil)))
	t.Cleanup(func() { driver.LogRedis(slog.New(slog.NewTextHandler(os.Stderr, nil))) })
	rdb := goredis.NewClient(&goredis.Options{Addr: storetest.DeadAddr(t), MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	for range 30 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("a ping to a dead address succeeded")
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "failed to dial") {
		t.Fatalf("want one warning of the failed dials, got %d lines:\n%s", len(lines), out.String())
	}
}
