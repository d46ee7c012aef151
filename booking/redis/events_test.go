package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// testStream returns a stream key of the test's own, deleted at the end.
func testStream(t *testing.T, rdb goredis.UniversalClient) string {
	key := "{flashseat:events-test}:" + booking.NewID("")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	return key
}

// collector gathers the events a handler sees, by dedupe id.
type collector struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *collector) handle(_ context.Context, e booking.LifecycleEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	c.seen[e.ID]++
	return nil
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutboxToStreamNoConsumer: events written to the outbox while no consumer runs are relayed into the stream
// and marked published; a consumer group started afterwards reads every one of them, in order, each with the
// outbox id as its dedupe id. A relay pass with nothing new publishes nothing again.
func TestOutboxToStreamNoConsumer(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	rdb := bookingtest.Redis(t)
	ctx := context.Background()
	key := testStream(t, rdb)
	const n = 250
	for i := range n {
		payload, _ := json.Marshal(map[string]any{"showId": "sh_x", "n": i})
		if _, err := pool.Exec(ctx, `INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, 'booking.held', $2)`,
			fmt.Sprintf("bk_%d", i), payload); err != nil {
			t.Fatal(err)
		}
	}
	relay := eventstream.NewRelay(postgres.New(pool).Outbox(), rdb, eventstream.Config{Key: key}, 0, nil)
	total := 0
	for {
		k, err := relay.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
		total += k
	}
	if total != n {
		t.Fatalf("relayed %d, want %d", total, n)
	}
	var unpublished int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished); err != nil || unpublished != 0 {
		t.Fatalf("%d rows unpublished (%v)", unpublished, err)
	}
	if got := rdb.XLen(ctx, key).Val(); got != n {
		t.Fatalf("stream holds %d entries, want %d", got, n)
	}
	// Published rows are pruned after Keep; an unpublished one never is.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (aggregate_id, type, payload) VALUES ('bk_late', 'booking.held', '{}')`); err != nil {
		t.Fatal(err)
	}
	relay.Keep = time.Nanosecond
	relay.Prune(ctx)
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d outbox rows after pruning (%v), want only the unpublished one", left, err)
	}

	var mu sync.Mutex
	var order []booking.LifecycleEvent
	cons := redis.NewConsumer(rdb, redis.ConsumerConfig{Stream: key, Group: "late", Name: "c1", Block: 50 * time.Millisecond})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go cons.Run(cctx, func(_ context.Context, e booking.LifecycleEvent) error {
		mu.Lock()
		order = append(order, e)
		mu.Unlock()
		return nil
	})
	waitFor(t, "every event", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) >= n })
	cancel()
	mu.Lock()
	defer mu.Unlock()
	first := int64(1) // the outbox's first id in a fresh database
	for i, e := range order[:n] {
		if want := fmt.Sprintf("ob_%d", first+int64(i)); e.ID != want || e.Type != booking.EventHeld ||
			e.ShowID != "sh_x" || e.Subject != fmt.Sprintf("bk_%d", i) || e.At.IsZero() {
			t.Fatalf("event %d = %+v, want id %s in outbox order", i, e, want)
		}
	}
	if len(order) != n {
		t.Fatalf("got %d deliveries, want %d", len(order), n)
	}
}

// TestConsumerCrashRedelivery: a consumer that read entries and died before acknowledging them has them taken
// over by another consumer of the group once they were idle for MinIdle; nothing is lost, and events the first
// one did acknowledge are not delivered again.
func TestConsumerCrashRedelivery(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	ctx := context.Background()
	key := testStream(t, rdb)
	st := redis.NewStream(rdb, redis.StreamConfig{Key: key})
	const n = 40
	for i := range n {
		if err := st.Publish(ctx, booking.LifecycleEvent{ID: fmt.Sprintf("ev_%d", i), Type: booking.EventConfirmed,
			ShowID: "sh_y", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// The first consumer acknowledges the first ten, then "crashes": its handler never returns success again
	// and its process stops.
	dying := redis.NewConsumer(rdb, redis.ConsumerConfig{Stream: key, Group: "g", Name: "dying", Count: 100,
		MinIdle: time.Hour, Block: 20 * time.Millisecond})
	var acked collector
	handled := 0
	dctx, die := context.WithCancel(ctx)
	if err := dying.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dying.Round(dctx, func(ctx context.Context, e booking.LifecycleEvent) error {
		handled++
		if handled <= 10 {
			return acked.handle(ctx, e)
		}
		die() // killed mid-batch: nothing after this is acknowledged
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if p := rdb.XPending(ctx, key, "g").Val(); p.Count != n-10 || p.Consumers["dying"] != n-10 {
		t.Fatalf("pending %+v, want %d with the dead consumer", p, n-10)
	}

	var got collector
	heir := redis.NewConsumer(rdb, redis.ConsumerConfig{Stream: key, Group: "g", Name: "heir",
		MinIdle: 150 * time.Millisecond, Block: 20 * time.Millisecond})
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go heir.Run(hctx, got.handle)
	waitFor(t, "redelivery", func() bool { return got.count() == n-10 })
	waitFor(t, "acknowledgement", func() bool { return rdb.XPending(ctx, key, "g").Val().Count == 0 })
	stop()
	got.mu.Lock()
	defer got.mu.Unlock()
	for id := range acked.seen {
		if got.seen[id] != 0 {
			t.Fatalf("%s was acknowledged by the first consumer and delivered again", id)
		}
	}
	for i := 10; i < n; i++ {
		if got.seen[fmt.Sprintf("ev_%d", i)] != 1 {
			t.Fatalf("ev_%d delivered %d times to the heir, want once", i, got.seen[fmt.Sprintf("ev_%d", i)])
		}
	}
}

// TestStreamRetention: MAXLEN ~ keeps the stream near its bound however much is published, and MINID ~ drops
// entries older than the configured age.
func TestStreamRetention(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	ctx := context.Background()

	t.Run("maxlen", func(t *testing.T) {
		key := testStream(t, rdb)
		st := redis.NewStream(rdb, redis.StreamConfig{Key: key, MaxLen: 200})
		for i := range 2000 {
			if err := st.Publish(ctx, booking.LifecycleEvent{ID: fmt.Sprintf("ev_%d", i), Type: booking.EventHeld}); err != nil {
				t.Fatal(err)
			}
		}
		// Approximate trimming removes whole nodes (100 entries by default): at least the bound is kept, and
		// less than a node more.
		if got := rdb.XLen(ctx, key).Val(); got < 200 || got > 300 {
			t.Fatalf("stream length %d after 2000 events with MaxLen 200, want 200..300", got)
		}
		last := rdb.XRevRangeN(ctx, key, "+", "-", 1).Val()
		if len(last) != 1 || last[0].Values["id"] != "ev_1999" {
			t.Fatalf("newest entry %v, want ev_1999", last)
		}
	})
	t.Run("maxage", func(t *testing.T) {
		key := testStream(t, rdb)
		// An age long enough that the 150 new entries are all younger than it while they are written, on a
		// loaded machine too.
		st := redis.NewStream(rdb, redis.StreamConfig{Key: key, MaxAge: 3 * time.Second})
		for i := range 300 {
			if err := st.Publish(ctx, booking.LifecycleEvent{ID: fmt.Sprintf("old_%d", i), Type: booking.EventHeld}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3200 * time.Millisecond)
		for i := range 150 {
			if err := st.Publish(ctx, booking.LifecycleEvent{ID: fmt.Sprintf("new_%d", i), Type: booking.EventHeld}); err != nil {
				t.Fatal(err)
			}
		}
		entries := rdb.XRange(ctx, key, "-", "+").Val()
		old := 0
		for _, m := range entries {
			if s, _ := m.Values["id"].(string); len(s) > 3 && s[:4] == "old_" {
				old++
			}
		}
		// Whole nodes of old entries go; a node may straddle the boundary, so fewer than a node may stay.
		if old >= 100 || len(entries)-old != 150 {
			t.Fatalf("%d old and %d new entries left, want fewer than 100 old and all 150 new", old, len(entries)-old)
		}
	})
}

// TestConsumerDeadLetter: an event whose handler always fails is delivered MaxDeliveries times, then moved to the
// dead-letter stream with its group, reason and delivery count, and acknowledged, so the group's pending list
// empties; the events around it are handled once each. An entry that is not an event goes there at once.
func TestConsumerDeadLetter(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	ctx := context.Background()
	key := testStream(t, rdb)
	dead := key + ":dead-letter"
	t.Cleanup(func() { rdb.Del(context.Background(), dead) })
	st := redis.NewStream(rdb, redis.StreamConfig{Key: key})
	for _, id := range []string{"ev_ok1", "ev_poison", "ev_ok2"} {
		if err := st.Publish(ctx, booking.LifecycleEvent{ID: id, Type: booking.EventConfirmed, ShowID: "sh_d",
			At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	rdb.XAdd(ctx, &goredis.XAddArgs{Stream: key, Values: []any{"hello", "world"}}) // written by hand

	var mu sync.Mutex
	var letters []redis.DeadLetter
	tries := map[string]int{}
	cons := redis.NewConsumer(rdb, redis.ConsumerConfig{Stream: key, Group: "g", Name: "c", MaxDeliveries: 3,
		MinIdle: 30 * time.Millisecond, Block: 20 * time.Millisecond,
		OnDeadLetter: func(d redis.DeadLetter) { mu.Lock(); letters = append(letters, d); mu.Unlock() }})
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go cons.Run(cctx, func(_ context.Context, e booking.LifecycleEvent) error {
		mu.Lock()
		defer mu.Unlock()
		tries[e.ID]++
		if e.ID == "ev_poison" {
			return fmt.Errorf("cannot handle %s", e.ID)
		}
		return nil
	})
	waitFor(t, "two dead letters", func() bool { mu.Lock(); defer mu.Unlock(); return len(letters) == 2 })
	waitFor(t, "an empty pending list", func() bool { return rdb.XPending(ctx, key, "g").Val().Count == 0 })
	time.Sleep(200 * time.Millisecond) // several more take-over rounds: nothing comes back
	stop()
	mu.Lock()
	defer mu.Unlock()
	if tries["ev_poison"] != 3 || tries["ev_ok1"] != 1 || tries["ev_ok2"] != 1 || len(letters) != 2 {
		t.Fatalf("handler tries %v, dead letters %+v; want the poison tried 3 times, the others once", tries, letters)
	}
	entries := rdb.XRange(ctx, dead, "-", "+").Val()
	if len(entries) != 2 {
		t.Fatalf("dead-letter stream holds %d entries, want 2", len(entries))
	}
	byReason := map[string]map[string]any{}
	for _, m := range entries {
		byReason[m.Values["dead_reason"].(string)] = m.Values
	}
	if p := byReason["max-deliveries"]; p == nil || p["id"] != "ev_poison" || p["dead_group"] != "g" ||
		p["dead_deliveries"] != "4" || p["type"] != booking.EventConfirmed {
		t.Fatalf("the poison's dead letter: %v", p)
	}
	if u := byReason["undecodable"]; u == nil || u["hello"] != "world" {
		t.Fatalf("the hand-written entry's dead letter: %v", u)
	}
}
