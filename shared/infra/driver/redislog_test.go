package driver_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// TestLogRedisOnceWhileDown: thirty commands to a Redis that is down make go-redis report thirty failed dials; the
// service's log gets one warning.
func TestLogRedisOnceWhileDown(t *testing.T) {
	// A file, which the client's goroutines may write (slog serialises the writes) while the test reads it.
	out, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	driver.LogRedis(slog.New(slog.NewTextHandler(out, nil)))
	t.Cleanup(func() { driver.LogRedis(slog.New(slog.NewTextHandler(os.Stderr, nil))) })
	rdb := goredis.NewClient(&goredis.Options{Addr: storetest.DeadAddr(t), MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	for range 30 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatal("a ping to a dead address succeeded")
		}
	}
	logged, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(logged)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "failed to dial") {
		t.Fatalf("want one warning of the failed dials, got %d lines:\n%s", len(lines), logged)
	}
}
