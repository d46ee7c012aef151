package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
)

// env is a migrated admission record on a database of the test's own and an event stream of its own.
type env struct {
	rec    *admpostgres.Record
	rdb    redis.UniversalClient
	stream eventstream.Config
}

func newEnv(t *testing.T) env {
	t.Helper()
	pool := pgtest.New(t)
	rec := admpostgres.New(pool)
	// The test's Redis (redistest); the stream sits under its prefix, so it is deleted with the test's keys.
	r := redistest.New(t)
	return env{rec: rec, rdb: r.Client, stream: eventstream.Config{Key: "{flashseat:events-test}:" + r.ID("events")}}
}

func (e env) set(t *testing.T, show string, fn func(*admission.Settings)) {
	t.Helper()
	if _, _, _, err := e.rec.Update(context.Background(), show, func(s admission.Settings) (admission.Settings, error) {
		fn(&s)
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// tick records the phase an admission tick saw, as a replica does when it sees the phase change.
func (e env) tick(t *testing.T, show, phase string, at time.Time) bool {
	t.Helper()
	changed, err := e.rec.RecordPhase(context.Background(), admission.PhaseChange{Show: show, Phase: phase, At: at,
		Waiting: 7, Active: 2, AdmittedTotal: 40})
	if err != nil {
		t.Fatal(err)
	}
	return changed
}

// drain runs relay passes until one relays nothing.
func (e env) drain(t *testing.T, r *eventstream.Relay) {
	t.Helper()
	for {
		n, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// events reads the whole stream back.
func (e env) events(t *testing.T) []eventstream.Event {
	t.Helper()
	var evs []eventstream.Event
	for _, m := range e.rdb.XRange(context.Background(), e.stream.Key, "-", "+").Val() {
		ev, err := eventstream.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestQueueEventsThroughOutbox: an operator's changes and the ticks' observations, made with no relay running,
// all reach the stream once the relay starts, in order, each once, each with a dedupe id of its own: switch on
// (the tick finds it open), pause, resume, sold out (seen by three replicas at once), back on sale, switch off.
// Changes that decide no phase (a rate change, a replica's repeat, a stale tick) write nothing.
func TestQueueEventsThroughOutbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	show := "sh_" + uuid.NewString()[:8]
	t0 := time.Now()

	e.set(t, show, func(s *admission.Settings) { s.Enabled = true })
	if !e.tick(t, show, "pre", t0.Add(time.Second)) || !e.tick(t, show, admission.PhaseOpen, t0.Add(2*time.Second)) {
		t.Fatal("a tick's new phase was not recorded")
	}
	if e.tick(t, show, admission.PhaseOpen, t0.Add(3*time.Second)) {
		t.Fatal("a second replica's sight of the same phase was recorded again")
	}
	e.set(t, show, func(s *admission.Settings) { s.AdmitPerSecond = 99 })
	e.set(t, show, func(s *admission.Settings) { s.Paused = true })
	e.set(t, show, func(s *admission.Settings) { s.Paused = false })
	if e.tick(t, show, admission.PhasePaused, t0.Add(-time.Second)) {
		t.Fatal("a stale tick (older than the operator's resume) was recorded")
	}
	// Three replicas see the show sell out at the same tick.
	soldAt := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			changed, err := e.rec.RecordPhase(context.Background(), admission.PhaseChange{Show: show,
				Phase: admission.PhaseSoldOut, At: soldAt})
			if err != nil {
				t.Error(err)
			}
			if changed {
				mu.Lock()
				recorded++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if recorded != 1 {
		t.Fatalf("%d replicas recorded the sell-out, want 1", recorded)
	}
	e.tick(t, show, admission.PhaseOpen, soldAt.Add(time.Second))
	e.set(t, show, func(s *admission.Settings) { s.Enabled = false })
	e.set(t, show, func(s *admission.Settings) { s.AdmitPerSecond = 5 }) // while off: nothing

	if got := e.events(t); len(got) != 0 {
		t.Fatalf("stream has %d events before any relay ran", len(got))
	}
	relay := eventstream.NewRelay(e.rec.Outbox(), e.rdb, e.stream, 0, nil)
	e.drain(t, relay)
	e.drain(t, relay) // nothing twice
	want := []struct{ typ, cause string }{{"queue.opened", "admission"}, {"queue.paused", "operator"},
		{"queue.opened", "operator"}, {"queue.sold_out", "admission"}, {"queue.opened", "admission"},
		{"queue.closed", "operator"}}
	got := e.events(t)
	if len(got) != len(want) {
		t.Fatalf("stream has %d events (%+v), want %d", len(got), got, len(want))
	}
	ids := map[string]bool{}
	for i, ev := range got {
		var data struct {
			ShowID, Phase, Previous, Cause string
			Waiting                        int64
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		if ev.Type != want[i].typ || data.Cause != want[i].cause || ev.ShowID != show || ev.Subject != show ||
			data.ShowID != show || admission.PhaseEvent(data.Phase) != ev.Type || ev.At.IsZero() || ids[ev.ID] {
			t.Fatalf("event %d = %+v %+v, want a new %s by %s", i, ev, data, want[i].typ, want[i].cause)
		}
		if data.Cause == "admission" && data.Waiting != 7 && ev.Type != "queue.sold_out" {
			t.Fatalf("event %d carries waiting %d, want the tick's 7", i, data.Waiting)
		}
		ids[ev.ID] = true
	}
}

// TestQueueOutboxSurvivesACrash: a relay that dies between appending and marking (its context cancelled in the
// middle of a pass) marks nothing; the next relay appends everything, the events it appended before dying again
// with the same dedupe ids, so a consumer dropping duplicates sees every event exactly once.
func TestQueueOutboxSurvivesACrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	show := "sh_" + uuid.NewString()[:8]
	t0 := time.Now()
	e.set(t, show, func(s *admission.Settings) { s.Enabled = true })
	e.tick(t, show, admission.PhaseOpen, t0.Add(time.Second))
	for i := range 3 {
		e.set(t, show, func(s *admission.Settings) { s.Paused = i%2 == 0 })
	}
	e.tick(t, show, admission.PhaseSoldOut, time.Now().Add(time.Second))
	const total = 5 // opened, paused, opened, paused, sold out

	ctx, cancel := context.WithCancel(context.Background())
	appended := 0
	n, err := e.rec.Outbox().Relay(ctx, 100, func(ev eventstream.Event) error {
		if appended == 2 {
			cancel() // the process dies here
			return ctx.Err()
		}
		appended++
		return eventstream.Append(ctx, e.rdb, e.stream, ev, time.Now())
	})
	if n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("a relay that died mid-pass marked %d (%v), want 0 and the cancellation", n, err)
	}
	// The dead pass's rows stay locked until PostgreSQL has rolled its transaction back, which a loaded machine
	// does after the next pass has looked (SKIP LOCKED: it sees none and ends): pass again until all are out.
	relay := eventstream.NewRelay(e.rec.Outbox(), e.rdb, e.stream, 0, nil)
	var got []eventstream.Event
	seen := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); len(seen) < total && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e.drain(t, relay)
		got, seen = e.events(t), map[string]int{}
		for _, ev := range got {
			seen[ev.ID]++
		}
	}
	if len(got) != total+2 || len(seen) != total {
		t.Fatalf("stream has %d entries with %d distinct ids, want %d entries (2 repeated) and %d ids", len(got),
			len(seen), total+2, total)
	}
	for id, k := range seen {
		if k > 2 {
			t.Fatalf("%s appended %d times", id, k)
		}
	}
}
