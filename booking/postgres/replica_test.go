package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestReplicaReads runs a store on a private primary with a streaming replica (pg_basebackup -R), replay paused
// and resumed on the replica to make its lag. Reads that may lag come from the replica while it is within its
// bound, and from the primary once it is behind by more or stopped; every other read comes from the primary.
func TestReplicaReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := startReplicated(t)
	pool, replicaPool, primary, standby, replay := rs.pool, rs.replicaPool, rs.primary, rs.standby, rs.replay
	// Two stores on the same primary and replica: one whose bound the test's pause never exceeds, one whose
	// bound it soon does.
	patient := postgres.NewReplica(replicaPool, pool, time.Hour, nil)
	strict := postgres.NewReplica(replicaPool, pool, 200*time.Millisecond, nil)
	st := postgres.New(pool).ReadFrom(patient)
	stStrict := postgres.New(pool).ReadFrom(strict)
	watch, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	for _, r := range []*postgres.Replica{patient, strict} {
		r.Check(ctx)
		go r.Watch(watch)
	}
	lagging := booking.MayLag(ctx)
	mine := func(st *postgres.Store, ctx context.Context) int {
		t.Helper()
		bs, err := st.BookingsOf(ctx, "u1", 10)
		if err != nil {
			t.Fatalf("bookings of: %v", err)
		}
		return len(bs)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("never %s", what)
			}
		}
	}

	// The base backup is taken before the primary's last writes (its checkpoint, the template's copy) are
	// replayed, so the first Check may find the replica behind: it is in use once Watch sees it caught up.
	waitFor("fresh once caught up", patient.Fresh)

	// Replay paused: what the primary writes is not on the replica.
	replay("pg_wal_replay_pause")
	sh := seedShow(t, st)
	if listed(t, st, lagging, sh.ID) || mine(st, lagging) != 0 {
		t.Fatal("a read that may lag did not come from the paused replica")
	}
	if !listed(t, st, ctx, sh.ID) {
		t.Fatal("a read that may not lag did not come from the primary")
	}
	// What decides a sale reads the primary: the show is there to hold seats of, and the fan's booking to pay.
	if _, err := st.Show(lagging, sh.ID); err != nil {
		t.Fatalf("show on the primary: %v", err)
	}
	b := hold(t, st, sh.ID, 0, "A1")
	if got, err := st.Booking(lagging, b.ID); err != nil || got.ID != b.ID {
		t.Fatalf("booking on the primary: %v %v", got.ID, err)
	}
	if mine(st, lagging) != 0 || mine(st, ctx) != 1 {
		t.Fatal("a fan's list of bookings: lagging from the replica, else from the primary")
	}

	// The strict store's replica falls behind its bound: its lagging reads go to the primary.
	waitFor("stale beyond the bound", func() bool { return !strict.Fresh() })
	if !listed(t, stStrict, lagging, sh.ID) || mine(stStrict, lagging) != 1 {
		t.Fatal("a replica behind its bound served a read")
	}

	// Replay resumes: the replica has the show, and the strict store uses it again.
	replay("pg_wal_replay_resume")
	primary.WaitReplayed(standby)
	// What the replica has replayed becomes visible to its readers a moment after the position WaitReplayed reads
	// (booking/app's TestReplicaReads waits the same way): soon, not at that instant.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l, n := listed(t, st, lagging, sh.ID), mine(st, lagging)
		if l && n == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the replica does not list what it replayed: show listed %v, %d bookings, replica in use %v", l, n,
				patient.Fresh())
		}
	}
	waitFor("fresh again", strict.Fresh)

	// The replica stops: reads that may lag go to the primary, at once, and the replica is out of use.
	standby.Stop("fast")
	sh2 := seedShow(t, st)
	if !listed(t, st, lagging, sh.ID) || !listed(t, st, lagging, sh2.ID) {
		t.Fatal("with the replica stopped, the catalog is not read from the primary")
	}
	if patient.Fresh() {
		t.Fatal("a stopped replica is still in use")
	}
	if mine(st, lagging) != 1 {
		t.Fatal("with the replica stopped, a fan's bookings are not read from the primary")
	}
	if _, err := st.ShowFigures(lagging, time.Now()); err != nil {
		t.Fatalf("operator's figures with the replica stopped: %v", err)
	}
	if _, err := st.Revenue(lagging, sh.ID); err != nil {
		t.Fatalf("revenue with the replica stopped: %v", err)
	}

	// It comes back and catches up: Watch puts it in use again.
	standby.Start()
	primary.WaitReplayed(standby)
	waitFor("in use after its restart", patient.Fresh)
	waitFor("the show it missed listed by the restarted replica", func() bool { return listed(t, st, lagging, sh2.ID) })
}

// replicated is a private primary with a test database on it, its streaming replica, and a pool on the replica's
// copy of the database.
type replicated struct {
	pool, replicaPool *pgxpool.Pool
	primary, standby  *storetest.Postgres
	replay            func(fn string) // runs pg_wal_replay_pause or pg_wal_replay_resume on the replica
}

func startReplicated(t *testing.T) replicated {
	t.Helper()
	ctx := context.Background()
	primary := storetest.StartPostgres(t)
	pool, url := pgtest.NewOn(t, primary.URL)
	standby := primary.StartStandby()
	replicaPool, err := postgres.OpenReplica(strings.Replace(url, primary.Addr, standby.Addr, 1), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replicaPool.Close)
	admin, err := pgxpool.New(ctx, standby.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return replicated{pool: pool, replicaPool: replicaPool, primary: primary, standby: standby,
		replay: func(fn string) {
			t.Helper()
			if _, err := admin.Exec(ctx, `SELECT `+fn+`()`); err != nil {
				t.Fatal(err)
			}
		}}
}

// listed reports whether st's Search under ctx lists the show.
func listed(t *testing.T, st booking.Store, ctx context.Context, show string) bool {
	t.Helper()
	res, err := st.Search(ctx, booking.Search{Limit: 100})
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	for _, e := range res {
		if slices.ContainsFunc(e.Shows, func(s booking.ShowSummary) bool { return s.ID == show }) {
			return true
		}
	}
	return false
}

// TestShardedReplicaReads: with DATABASE_SHARDS, the read URL replicates the catalog database. The directory
// comes from the catalog's replica; a fan's bookings, on the show's shard, from the shard, which has no replica.
func TestShardedReplicaReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := startReplicated(t)
	ring, err := shard.New([]string{"s1"})
	if err != nil {
		t.Fatal(err)
	}
	shards, err := postgres.NewShards(rs.pool, ring, []*pgxpool.Pool{pgtest.New(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := postgres.NewReplica(rs.replicaPool, rs.pool, time.Hour, nil)
	// As in TestReplicaReads: the replica may be behind the base backup's last writes at first.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r.Check(ctx); r.Fresh() {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the catalog's replica never caught up")
		}
	}
	shards.Catalog().ReadFrom(r)
	lagging := booking.MayLag(ctx)

	rs.replay("pg_wal_replay_pause")
	sh := seedShow(t, shards)
	b := booking.Booking{ID: shard.ID("bk_", sh.ID), UserID: "u1", ShowID: sh.ID, SeatIDs: []string{"A1"},
		Currency: "INR", Fence: 1, ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now()}
	if err := shards.CreateHold(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if listed(t, shards, lagging, sh.ID) || !listed(t, shards, ctx, sh.ID) {
		t.Fatal("the directory under lag does not come from the catalog's replica, or without it from the primary")
	}
	if bs, err := shards.BookingsOf(lagging, "u1", 10); err != nil || len(bs) != 1 {
		t.Fatalf("a fan's bookings on the shard: %d %v, want the hold", len(bs), err)
	}
	rs.replay("pg_wal_replay_resume")
	rs.primary.WaitReplayed(rs.standby)
	// Replayed is not yet visible to every new snapshot on the standby at that instant (as TestReplicaReads found
	// in a loaded make test): wait for the show to be listed, rather than read once.
	for end := time.Now().Add(30 * time.Second); !listed(t, shards, lagging, sh.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the catalog's replica does not list the show it replayed")
		}
	}
}
