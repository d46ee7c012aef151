// Package admissiontest gives tests a real admission Keeper: the PostgreSQL record on a test's own database and
// the Redis cache on the shared test Redis, with show ids that clean up after themselves.
package admissiontest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// Keeper returns a keeper of the cache on rdb over the admission record on pool (a database pgtest migrated).
func Keeper(t testing.TB, pool *pgxpool.Pool, rdb goredis.UniversalClient) *admission.Keeper {
	t.Helper()
	return admission.NewKeeper(admpostgres.New(pool), admredis.New(rdb), nil)
}

// Counting is the PostgreSQL record, counting the settings reads it answers: what a show's queue costs the
// record, seen from where the record is used.
type Counting struct {
	admission.Record
	reads atomic.Int64
}

// Settings implements admission.Record, counting the read.
func (c *Counting) Settings(ctx context.Context, show string) (admission.Settings, int64, bool, error) {
	c.reads.Add(1)
	return c.Record.Settings(ctx, show)
}

// SettingsReads is how many times the settings were read from the record.
func (c *Counting) SettingsReads() int64 { return c.reads.Load() }

// CountingKeeper is Keeper over a record that counts its settings reads.
func CountingKeeper(t testing.TB, pool *pgxpool.Pool, rdb goredis.UniversalClient) (*admission.Keeper, *Counting) {
	t.Helper()
	Keeper(t, pool, rdb) // migrates
	rec := &Counting{Record: admpostgres.New(pool)}
	return admission.NewKeeper(rec, admredis.New(rdb), nil), rec
}

// Show returns a unique show id whose shared cache keys are deleted when the test ends.
func Show(t testing.TB, rdb goredis.UniversalClient, prefix string) string {
	t.Helper()
	id := prefix + uuid.NewString()[:13]
	t.Cleanup(func() { Wipe(context.Background(), rdb, id) })
	return id
}

// Wipe deletes a show's cached queue state, as a Redis that lost its data, or a cluster master's replica that
// lacked its newest writes, would have (the global synced mark stays, as on a cluster it may).
func Wipe(ctx context.Context, rdb goredis.UniversalClient, show string) {
	rdb.Del(ctx, rediskey.QueueConfig(show), rediskey.QueueActive(show), rediskey.QueueRevoked(show))
}

// SetSettings writes settings into the cache only, for tests of code that reads the cache (no record behind).
func SetSettings(t testing.TB, rdb goredis.UniversalClient, show string, s admission.Settings) {
	t.Helper()
	if err := admredis.New(rdb).SetSettings(context.Background(), show, s); err != nil {
		t.Fatal(err)
	}
}
