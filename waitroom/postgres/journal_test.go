package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
)

// TestJournal: a fan's first place is the one kept however often they join again (on this replica, or on another
// with a journal of its own); refusals add up per minute and reason, marked suspect as the refusal table says;
// what a flush could not write (PostgreSQL gone) is written by the next.
func TestJournal(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	a := wrpostgres.NewJournal(pgshard.Single(pool), nil)
	b := wrpostgres.NewJournal(pgshard.Single(pool), nil)
	t0 := time.Date(2026, 12, 2, 5, 40, 10, 0, time.UTC)

	a.Joined("s1", "u1", t0, false)
	a.Joined("s1", "u1", t0.Add(time.Second), false) // the same fan again: the first stays
	a.Joined("s1", "u2", t0.Add(2*time.Second), true)
	a.Refused("s1", waitroom.ReasonProofRequired, t0)
	a.Refused("s1", waitroom.ReasonProofRequired, t0.Add(5*time.Second))
	a.Refused("s1", waitroom.ReasonPrefixBlocked, t0.Add(time.Minute))
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b.Joined("s1", "u1", t0.Add(time.Hour), false) // another replica: the record keeps the first
	b.Refused("s1", waitroom.ReasonProofRequired, t0.Add(30*time.Second))
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var joined time.Time
	var shadow bool
	if err := pool.QueryRow(ctx, `SELECT joined_at, shadow FROM queue_joins WHERE show_id = 's1' AND user_id = 'u1'`).
		Scan(&joined, &shadow); err != nil || !joined.Equal(t0) || shadow {
		t.Errorf("u1's join: %s shadow %v (%v), want %s", joined, shadow, err, t0)
	}
	if err := pool.QueryRow(ctx, `SELECT shadow FROM queue_joins WHERE show_id = 's1' AND user_id = 'u2'`).
		Scan(&shadow); err != nil || !shadow {
		t.Errorf("u2's shadow place: %v (%v)", shadow, err)
	}
	rows, err := pool.Query(ctx, `SELECT minute, reason, n, suspect FROM queue_refusals WHERE show_id = 's1' ORDER BY minute, reason`)
	if err != nil {
		t.Fatal(err)
	}
	type refusal struct {
		minute  time.Time
		reason  string
		n       int64
		suspect bool
	}
	var got []refusal
	for rows.Next() {
		var r refusal
		if err := rows.Scan(&r.minute, &r.reason, &r.n, &r.suspect); err != nil {
			t.Fatal(err)
		}
		r.minute = r.minute.UTC()
		got = append(got, r)
	}
	want := []refusal{{t0.Truncate(time.Minute), waitroom.ReasonProofRequired, 3, false},
		{t0.Add(time.Minute).Truncate(time.Minute), waitroom.ReasonPrefixBlocked, 1, true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("refusals: got %+v, want %+v", got, want)
	}

	// The write fails (the table is not there for a moment): the flush keeps its rows, and the next one, once the
	// table is back, writes them, the refusal's count once.
	if _, err := pool.Exec(ctx, `ALTER TABLE queue_joins RENAME TO queue_joins_away`); err != nil {
		t.Fatal(err)
	}
	a.Joined("s2", "u3", t0, false)
	a.Refused("s2", waitroom.ReasonProofForged, t0)
	if err := a.Flush(ctx); err == nil {
		t.Fatal("a flush without its table succeeded")
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE queue_joins_away RENAME TO queue_joins`); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n, forged int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM queue_joins WHERE show_id = 's2'),
		(SELECT sum(n) FROM queue_refusals WHERE show_id = 's2')`).Scan(&n, &forged); err != nil || n != 1 || forged != 1 {
		t.Errorf("s2 after the failed flush: %d joins, %d refusals (%v), want 1 and 1", n, forged, err)
	}
	if a.Dropped() != 0 {
		t.Errorf("dropped %d", a.Dropped())
	}
}
