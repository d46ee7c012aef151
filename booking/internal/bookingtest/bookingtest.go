// Package bookingtest builds booking's test fixtures on the real stores: a Service over a fresh Postgres database
// (pgtest) and the test's Redis (redistest), with a seeded show whose keys are deleted when the test ends. Every
// show id is unique, so tests never see each other's Redis keys and nothing is ever flushed.
package bookingtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/token"
)

// Redis returns the test's Redis client (redistest: REDIS_URL's single Redis, or the package's cluster in its
// cluster pass), closed at the end of the test.
func Redis(t testing.TB) goredis.UniversalClient {
	t.Helper()
	return redistest.New(t).Client
}

// DeleteShowKeys deletes every Redis key carrying the show's hash tag, on every master of a cluster.
func DeleteShowKeys(rdb goredis.UniversalClient, showID string) {
	_ = redistest.DeleteShow(context.Background(), rdb, showID)
}

// Env is a Service on the real stores with one show on sale.
type Env struct {
	Svc   *booking.Service
	Store *postgres.Store
	Locks *redis.Locks
	Pool  *pgxpool.Pool
	RDB   goredis.UniversalClient
	Show  booking.Show
	// Queues keeps the queue settings and admissions of a gated Env (NewGated): record and cache.
	Queues *admission.Keeper
}

// New returns an Env. cfg tunes the Service; its zero value is the defaults.
func New(t testing.TB, cfg booking.Config) *Env {
	t.Helper()
	pool := pgtest.New(t)
	return NewOn(t, pool, Redis(t), cfg)
}

// NewGated is New with a waiting-room gate trusting keys.
func NewGated(t testing.TB, cfg booking.Config, keys token.KeySource) *Env {
	t.Helper()
	rdb := Redis(t)
	pool := pgtest.New(t)
	queues := admissiontest.Keeper(t, pool, rdb)
	e := NewOn(t, pool, rdb, cfg, admission.NewGate(queues, keys, 0))
	e.Queues = queues
	return e
}

// QueueOn records s as show's queue settings (as an operator would) and returns once every gate sees them.
func (e *Env) QueueOn(t testing.TB, show string, s admission.Settings) {
	t.Helper()
	if _, _, err := e.Queues.Update(context.Background(), show,
		func(admission.Settings) (admission.Settings, error) { return s, nil }); err != nil {
		t.Fatal(err)
	}
}

// NewOn is New on given stores, with an optional gate.
func NewOn(t testing.TB, pool *pgxpool.Pool, rdb goredis.UniversalClient, cfg booking.Config, gate ...*admission.Gate) *Env {
	t.Helper()
	e := &Env{Store: postgres.New(pool), Locks: redis.New(rdb), Pool: pool, RDB: rdb}
	var g booking.Admitter
	if len(gate) > 0 && gate[0] != nil {
		g = gate[0]
	}
	e.Svc = booking.New(e.Store, e.Locks, g, cfg)
	e.Show = e.NewShow(t)
	return e
}

// NewShow seeds a 200-seat show on sale and deletes its Redis keys at the end of the test.
func (e *Env) NewShow(t testing.TB) booking.Show {
	t.Helper()
	ctx := context.Background()
	v, err := e.Svc.CreateVenue(ctx, booking.Venue{Name: "PVR Forum", City: "Bangalore",
		Halls: []booking.Hall{{Name: "Screen 1", Rows: app.DemoRows()}}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.Svc.CreateEvent(ctx, booking.Event{Title: "Premiere", Kind: "movie", Genre: "Drama",
		Language: "English", DurationMinutes: 150})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := e.Svc.CreateShow(ctx, booking.Show{EventID: ev.ID, HallID: v.Halls[0].ID,
		StartsAt: time.Now().Add(48 * time.Hour), SaleStartsAt: time.Now().Add(-time.Hour), Currency: "INR",
		Prices: map[string]int64{"SILVER": 25000, "GOLD": 45000, "PLATINUM": 80000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DeleteShowKeys(e.RDB, sh.ID) })
	return sh
}
