// Package storetest makes real stores unreachable for tests: clients of PostgreSQL and Redis pointed at a
// loopback port nothing listens on, as a crashed or restarting server looks to a client. Nothing is imitated:
// the drivers dial and are refused.
package storetest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
)

// TB is the part of testing.TB the private servers use. A test passes its *testing.T; a TestMain that starts
// servers shared by a package's tests passes its own (redistest does), with cleanups run after the tests.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// DeadAddr returns a loopback address nothing listens on: a port bound and released at once.
func DeadAddr(t TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// DeadPool returns a pool configured like live (same user, database, settings) but dialing a dead address.
// It is closed at the end of the test.
func DeadPool(t testing.TB, live *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	cfg := live.Copy()
	host, port, _ := net.SplitHostPort(DeadAddr(t))
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.ConnConfig.Fallbacks = nil
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// DeadRedis returns a Redis client dialing a dead address, without retries, closed at the end of the test.
func DeadRedis(t testing.TB) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: DeadAddr(t), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
