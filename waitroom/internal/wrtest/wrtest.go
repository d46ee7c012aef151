// Package wrtest gives the waiting room's tests their records on a real PostgreSQL: one fresh database per test,
// shared by every service (replica) the test starts, as replicas share one PostgreSQL; and a stream's
// notifications as a channel.
package wrtest

import (
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
)

var (
	mu  sync.Mutex
	dbs = map[testing.TB]*pgxpool.Pool{}
)

// Database is the test's own database with the waiting room's records and the audit log migrated, made on
// first use and dropped when the test ends.
func Database(t testing.TB) *pgxpool.Pool {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := dbs[t]; ok {
		return p
	}
	p := pgtest.New(t) // migrated: every table, the waiting room's and the audit log's too
	dbs[t] = p
	t.Cleanup(func() { mu.Lock(); delete(dbs, t); mu.Unlock() })
	return p
}

// Keeper is the admission keeper on the test's database and rdb.
func Keeper(t testing.TB, rdb goredis.UniversalClient) *admission.Keeper {
	t.Helper()
	return admissiontest.Keeper(t, Database(t), rdb)
}

// Service is a waiting room over store with its records on the test's database.
func Service(t testing.TB, store waitroom.Store, rdb goredis.UniversalClient, is *token.Issuer, opt waitroom.Options) *waitroom.Service {
	t.Helper()
	return waitroom.New(store, wrpostgres.New(Database(t)), Keeper(t, rdb), is, opt)
}

// Signals subscribes to w's notifications as a stream does (Watcher.OnChange) and delivers them on a channel
// that keeps one pending: the ones that come while it is full coalesce into it.
func Signals(w *waitroom.Watcher) <-chan struct{} {
	c := make(chan struct{}, 1)
	w.OnChange(func() {
		select {
		case c <- struct{}{}:
		default:
		}
	})
	return c
}
