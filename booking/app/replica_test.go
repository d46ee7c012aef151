package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// TestReplicaReads runs booking with DATABASE_READ_URL, a streaming replica of its private primary, replay paused
// on the replica while a show is created and sold: the catalog and the fan's list of bookings do not show them
// yet (they are read from the replica), while the hold and the payment, which decide the sale, succeed (they read
// the primary). Once the replica has replayed, the pages show both; once it is stopped, they are read from the
// primary, with 200s, and the next sale goes through.
func TestReplicaReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := storetest.StartPostgres(t)
	_, url := pgtest.NewOn(t, primary.URL)
	standby := primary.StartStandby()
	admin, err := pgxpool.New(ctx, standby.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	st := newStack(t, "DATABASE_URL", url, "DATABASE_READ_URL", strings.Replace(url, primary.Addr, standby.Addr, 1),
		"DATABASE_READ_MAX_LAG", "1h")
	get := func(path, tok, want string, listed bool) {
		t.Helper()
		a := st.do("GET", path, tok, nil)
		if a.status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.status, a.body)
		}
		if got := strings.Contains(string(a.body), want); got != listed {
			t.Fatalf("GET %s lists %s: %v, want %v: %s", path, want, got, listed, a.body)
		}
	}

	if _, err := admin.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	show := st.show()
	tok := st.guest()
	b := st.hold(tok, show, "A1")
	if p := st.pay(tok, b, sim.CardOK, "k1"); p.status != 200 || p.json(t)["status"] != "CONFIRMED" {
		t.Fatalf("pay with the replica paused: %d %s", p.status, p.body)
	}
	get("/api/v1/events", "", show, false)
	get("/api/v1/bookings", tok, b, false)
	get("/api/v1/bookings/"+b, tok, "CONFIRMED", true)

	if _, err := admin.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	primary.WaitReplayed(standby)
	// Replay is asynchronous: what the replica has replayed becomes visible to its readers a moment after the
	// position WaitReplayed reads; the pages must show it soon, not at that instant.
	for _, q := range [][3]string{{"/api/v1/events", "", show}, {"/api/v1/bookings", tok, b}} {
		waitUntil(t, func() bool {
			a := st.do("GET", q[0], q[1], nil)
			return a.status == 200 && strings.Contains(string(a.body), q[2])
		})
	}

	standby.Stop("fast")
	get("/api/v1/events", "", show, true)
	get("/api/v1/bookings", tok, b, true)
	get("/admin/v1/stats", adminToken, show, true)
	get("/admin/v1/shows/"+show+"/stats", adminToken, "45000", true)
	b2 := st.hold(tok, show, "A2")
	if p := st.pay(tok, b2, sim.CardOK, "k2"); p.status != 200 || p.json(t)["status"] != "CONFIRMED" {
		t.Fatalf("pay with the replica stopped: %d %s", p.status, p.body)
	}
	get("/api/v1/bookings", tok, b2, true)
}
