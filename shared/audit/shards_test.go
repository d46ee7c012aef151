package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestShardedLog keeps each show's entries on its shard and entries of no show on the main database; the list
// of every show merges all three newest first by time, one show's list reads its shard alone, and with a shard
// closed the list across shows fails while a show of the other shard still lists.
func TestShardedLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	main, s1, s2 := pgtest.New(t), pgtest.New(t), pgtest.New(t)
	ring, _ := shard.New([]string{"s1", "s2"})
	dbs, err := pgshard.New(main, ring, []*pgxpool.Pool{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	l := audit.NewSharded(dbs)
	var on [2]string
	for i := 0; on[0] == "" || on[1] == ""; i++ {
		show := fmt.Sprint("show-", i)
		on[ring.Of(show)] = show
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, e := range []audit.Entry{{ShowID: on[1]}, {}, {ShowID: on[0]}, {ShowID: on[1]}} {
		e.Action, e.At, e.New = "a"+fmt.Sprint(i), at.Add(time.Duration(i)*time.Minute), json.RawMessage(`true`)
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	count := func(db *pgxpool.Pool) (n int) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if m, a, b := count(main), count(s1), count(s2); m != 1 || a != 1 || b != 2 {
		t.Fatalf("entries on main, s1, s2: %d %d %d, want 1 1 2", m, a, b)
	}
	es, err := l.List(ctx, audit.Filter{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Action)
	}
	if fmt.Sprint(got) != "[a3 a2 a1]" {
		t.Fatalf("list across shows = %v, want the newest three by time", got)
	}
	if es, err := l.List(ctx, audit.Filter{ShowID: on[1]}); err != nil || len(es) != 2 || es[0].Action != "a3" {
		t.Fatalf("list of a show on s2 = %+v %v", es, err)
	}
	s2.Close()
	if _, err := l.List(ctx, audit.Filter{}); err == nil {
		t.Fatal("list across shows with s2 closed: no error")
	}
	if es, err := l.List(ctx, audit.Filter{ShowID: on[0]}); err != nil || len(es) != 1 {
		t.Fatalf("list of a show on s1 with s2 closed = %+v %v", es, err)
	}
}
