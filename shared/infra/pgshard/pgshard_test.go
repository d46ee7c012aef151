package pgshard_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestSweepAndAll: a sweep takes the shards that answer and fails only when none does; a read across shows fails
// as soon as one shard cannot answer.
func TestSweepAndAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	main, s1, s2 := pgtest.New(t), pgtest.New(t), pgtest.New(t)
	ring, _ := shard.New([]string{"s1", "s2"})
	dbs, err := pgshard.New(main, ring, []*pgxpool.Pool{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	one := func(ctx context.Context, db *pgxpool.Pool) (int64, error) {
		var n int64
		return n, db.QueryRow(ctx, `SELECT 1`).Scan(&n)
	}
	list := func(ctx context.Context, db *pgxpool.Pool) ([]int64, error) {
		n, err := one(ctx, db)
		return []int64{n}, err
	}
	if n, err := pgshard.Sweep(ctx, dbs, one); err != nil || n != 2 {
		t.Fatalf("sweep of two shards = %d %v", n, err)
	}
	if got, err := pgshard.All(ctx, dbs, true, list); err != nil || len(got) != 3 {
		t.Fatalf("read across main and two shards = %v %v", got, err)
	}
	s2.Close()
	if n, err := pgshard.Sweep(ctx, dbs, one); err != nil || n != 1 {
		t.Fatalf("sweep with s2 closed = %d %v, want s1's alone", n, err)
	}
	if _, err := pgshard.All(ctx, dbs, false, list); err == nil {
		t.Fatal("read across shows with s2 closed: no error")
	}
	s1.Close()
	if _, err := pgshard.Sweep(ctx, dbs, one); err == nil {
		t.Fatal("sweep with every shard closed: no error")
	}
	if dbs.For("any") == main || pgshard.Single(main).For("any") != main {
		t.Fatal("For: a sharded show on main, or an unsharded one elsewhere")
	}
}
