package app

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestShardedQueues runs the edge with DATABASE_SHARDS over two shards and a main database: s1 a test database,
// s2 a private server the test stops. A show on each shard turns its queue on, a fan joins and is admitted, and
// an operator issues a bypass code: every row of it (settings, phase, outbox event, admissions, the waiting
// room's record, the code, the audit entries) is on the show's shard and on no other database. With s2 stopped,
// s2's shows answer 503 with Retry-After (a show's first join, an operator's change) and admit nobody, while s1's
// keep admitting; once s2 is back its shows admit again.
func TestShardedQueues(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	ctx := context.Background()
	mainPool, mainURL := pgtest.NewWithURL(t)
	s1Pool, s1URL := pgtest.NewWithURL(t)
	s2 := storetest.StartPostgres(t)
	const adminToken = "adm_edge_shards_0123456789"
	edge := startEdge(t, map[string]string{"DATABASE_URL": mainURL, "DATABASE_SHARDS": "s1=" + s1URL + " s2=" + s2.URL,
		"ADMIN_TOKEN": adminToken, "QUEUE_TICK": "20ms"})
	s2Pool, err := pgxpool.New(ctx, s2.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2Pool.Close)
	shards := []*pgxpool.Pool{s1Pool, s2Pool}
	ring, _ := shard.New([]string{"s1", "s2"})

	// Two shows on each shard: the first of each is used before s2 stops, the second's queue only switched on.
	var on [2][]string
	for len(on[0]) < 2 || len(on[1]) < 2 {
		show := newShow(t, rdb)
		if i := ring.Of(show); len(on[i]) < 2 {
			on[i] = append(on[i], show)
		}
	}
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	setQueue := func(show, body string) int {
		res, _ := do(t, "PUT", edge+"/admin/v1/shows/"+show+"/queue", body, admin)
		return res.StatusCode
	}
	const settings = `{"enabled":true,"admitPerSecond":20,"maxActive":50,"tokenTtlSeconds":60,"botProtection":{"enabled":false}}`
	fan := func(show, user, path, method string) (*http.Response, map[string]any) {
		res, b := do(t, method, edge+"/queue/"+show+path, "",
			map[string]string{"Authorization": "Bearer " + userToken(t, user)})
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return res, out
	}
	// admitted waits for a fan who joined to be admitted, and reports whether they were within the wait.
	admitted := func(show, user string, wait time.Duration) bool {
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if res, st := fan(show, user, "/status", "GET"); res.StatusCode == 200 && st["status"] == "admitted" {
				return true
			}
		}
		return false
	}
	for i := range on {
		for _, show := range on[i] {
			onSale(t, rdb, show)
			if s := setQueue(show, settings); s != 200 {
				t.Fatalf("queue of %s on s%d: %d", show, i+1, s)
			}
		}
		show := on[i][0]
		if res, st := fan(show, "fan-a", "/join", "POST"); res.StatusCode != 200 {
			t.Fatalf("join %s on s%d: %d %v", show, i+1, res.StatusCode, st)
		}
		if !admitted(show, "fan-a", 10*time.Second) {
			t.Fatalf("fan of %s on s%d never admitted", show, i+1)
		}
		if res, b := do(t, "POST", edge+"/admin/v1/shows/"+show+"/bypass-codes",
			`{"expiresAt":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`, admin); res.StatusCode != 201 {
			t.Fatalf("bypass codes of %s: %d %s", show, res.StatusCode, b)
		}
	}

	// Every row of a show is on its shard, none on the other shard or the main database.
	count := func(db *pgxpool.Pool, table, show string) int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE show_id = $1`, show).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		return n
	}
	for i := range on {
		show := on[i][0]
		for _, table := range []string{"queue_settings", "queue_phase", "queue_outbox", "queue_grants",
			"waitroom_queues", "bypass_codes", "audit_log"} {
			if n := count(shards[i], table, show); n == 0 {
				t.Errorf("%s: no row of %s on its shard s%d", table, show, i+1)
			}
			for _, db := range []*pgxpool.Pool{shards[1-i], mainPool} {
				if n := count(db, table, show); n != 0 {
					t.Errorf("%s: %d rows of %s (of s%d) off its shard", table, n, show, i+1)
				}
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// s2 stops: its shows answer 503 with Retry-After and admit nobody; s1's keep admitting.
	s2.Stop("immediate")
	wantUnavailable := func(what string, res *http.Response) {
		t.Helper()
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s with s2 down: %d (Retry-After %q), want 503 with Retry-After", what, res.StatusCode,
				res.Header.Get("Retry-After"))
		}
	}
	res, _ := fan(on[1][1], "fan-b", "/join", "POST") // a queue this edge has no state of yet: read from s2
	wantUnavailable("first join of an s2 show", res)
	res, _ = do(t, "PUT", edge+"/admin/v1/shows/"+on[1][0]+"/queue", `{"paused":true}`, admin)
	wantUnavailable("operator's change of an s2 show", res)
	if res, st := fan(on[1][0], "fan-c", "/join", "POST"); res.StatusCode == 200 && st["status"] == "admitted" {
		t.Errorf("a fan of an s2 show admitted while s2 is down: %v", st)
	}
	for _, show := range on[0] {
		if res, st := fan(show, "fan-d", "/join", "POST"); res.StatusCode != 200 {
			t.Fatalf("join %s on s1 with s2 down: %d %v", show, res.StatusCode, st)
		}
		if !admitted(show, "fan-d", 10*time.Second) {
			t.Errorf("fan of %s on s1 not admitted with s2 down", show)
		}
	}
	if s := setQueue(on[0][0], `{"admitPerSecond":30}`); s != 200 {
		t.Errorf("operator's change of an s1 show with s2 down: %d", s)
	}
	if admitted(on[1][0], "fan-c", time.Second) {
		t.Errorf("a fan of an s2 show admitted while s2 is down")
	}

	// s2 comes back: its shows admit again, the fan who waited through the outage included.
	s2.Start()
	if !admitted(on[1][0], "fan-c", 20*time.Second) {
		t.Errorf("the fan who waited through s2's outage was not admitted once it was back")
	}
	var joined bool
	for deadline := time.Now().Add(20 * time.Second); !joined && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		res, _ := fan(on[1][1], "fan-b", "/join", "POST")
		joined = res.StatusCode == 200
	}
	if !joined || !admitted(on[1][1], "fan-b", 10*time.Second) {
		t.Errorf("the s2 show's first fan not admitted once s2 was back (joined %v)", joined)
	}
}
