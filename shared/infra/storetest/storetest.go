// Package storetest makes real stores unreachable for tests: clients of PostgreSQL and Redis pointed at a
// loopback port nothing listens on, as a crashed or restarting server looks to a client. Nothing is imitated:
// the drivers dial and are refused. A DelayProxy makes a real store slow instead: every round trip through it a
// set delay longer.
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

// DeadAddr returns a loopback address nothing listens on for the rest of the test, as a crashed server looks:
// connections to it are refused. Its port stays bound, never listening, until the test ends (reserve), so no other
// socket can take it meanwhile. A port merely released at once was taken, within one run of make test, by a
// parallel test's HTTP server: the "dead" Redis client then spoke RESP to it, read a reply that is no store
// error, and the edge answered 500 where 503 was due.
func DeadAddr(t TB) string {
	t.Helper()
	return reserved(t, false)
}

// FreeAddr returns a loopback address for a server the test starts on it, perhaps more than once (a restart).
// Its port stays reserved for the test's life, bound with SO_REUSEADDR and never listening (reserve): the kernel
// hands it to no other socket, while the test's server, which sets SO_REUSEADDR as Go's listeners, redis-server,
// PostgreSQL and nginx do, may listen on it. A port bound and released at once could be taken by another
// socket before the server bound it.
func FreeAddr(t TB) string {
	t.Helper()
	return reserved(t, true)
}

// reserved is reserve failing the test when no port can be had.
func reserved(t TB, shared bool) string {
	t.Helper()
	addr, err := reserve(t, shared)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return addr
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
