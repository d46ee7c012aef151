package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/booking/postgres/pgtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// TestQueueEvents: two edge replicas on one database tick a show's queue; the operator switches it on, pauses and
// resumes it through the admin API, it sells out, and the operator switches it off: one queue event of each is
// appended to the event stream (not one per replica) by the edges' queue outbox relay, each with its dedupe id
// and the show.
func TestQueueEvents(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	ctx := context.Background()
	stream := "{flashseat:events-test}:" + uuid.NewString()
	show := newShow(t, rdb)
	t.Cleanup(func() { rdb.Del(ctx, stream) })
	onSale(t, rdb, show)
	_, dbURL := pgtest.NewWithURL(t)
	const adminToken = "adm_edge_events_0123456789"
	env := map[string]string{"EVENTS_STREAM": stream, "QUEUE_TICK": "20ms", "ADMIN_TOKEN": adminToken,
		"DATABASE_URL": dbURL}
	var edges []string
	operator := func(body string) {
		t.Helper()
		if res, b := do(t, "PUT", edges[0]+"/admin/v1/shows/"+show+"/queue", body,
			map[string]string{"Authorization": "Bearer " + adminToken}); res.StatusCode != 200 {
			t.Fatalf("PUT queue settings %s: %d %s", body, res.StatusCode, b)
		}
	}
	for i := range 2 {
		edge := startEdge(t, env)
		edges = append(edges, edge)
		if i == 0 {
			// The watching fans' streams join without a proof of work: bot protection off.
			operator(`{"enabled":true,"admitPerSecond":1,"maxActive":1,"tokenTtlSeconds":60,` +
				`"botProtection":{"enabled":false}}`)
		}
		// A fan watching on each replica makes both tick the show.
		req, _ := http.NewRequest("GET", edge+"/queue/"+show+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+userToken(t, "fan"+strconv.Itoa(i)))
		sctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		resp, err := http.DefaultClient.Do(req.WithContext(sctx))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	waitTypes := func(want ...string) []eventstream.Event {
		t.Helper()
		var evs []eventstream.Event
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			evs = evs[:0]
			for _, m := range rdb.XRange(ctx, stream, "-", "+").Val() {
				e, err := eventstream.Decode(m)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, e)
			}
			if len(evs) >= len(want) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // ten more ticks on each replica: no duplicate may follow
		if n := rdb.XLen(ctx, stream).Val(); n != int64(len(want)) || len(evs) != len(want) {
			t.Fatalf("stream has %d events (%v), want %v", n, evs, want)
		}
		for i, e := range evs {
			if e.Type != want[i] || e.ShowID != show || e.ID == "" || e.At.IsZero() {
				t.Fatalf("event %d = %+v, want %s of %s", i, e, want[i], show)
			}
		}
		return evs
	}
	waitTypes("queue.opened")
	operator(`{"paused":true}`)
	waitTypes("queue.opened", "queue.paused")
	operator(`{"paused":false}`)
	waitTypes("queue.opened", "queue.paused", "queue.opened")
	rdb.HSet(ctx, rediskey.ShowInfo(show), rediskey.InfoAvailable, 0, rediskey.InfoHeld, 0)
	rdb.Publish(ctx, rediskey.AvailabilityEvents, show)
	waitTypes("queue.opened", "queue.paused", "queue.opened", "queue.sold_out")
	operator(`{"enabled":false}`)
	evs := waitTypes("queue.opened", "queue.paused", "queue.opened", "queue.sold_out", "queue.closed")
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.ID] {
			t.Fatalf("two events share the dedupe id %s", e.ID)
		}
		seen[e.ID] = true
	}
}

// phaseLog is a phase record that remembers what it was told.
type phaseLog struct {
	mu   sync.Mutex
	told []string
	fail bool
}

func (p *phaseLog) RecordPhase(_ context.Context, c admission.PhaseChange) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.told = append(p.told, c.Show+":"+c.Phase)
	if p.fail {
		return false, errors.New("postgres down")
	}
	return true, nil
}

// TestQueueEventsObserve: a replica tells the record of a show's phase when it changes, when it has not told it
// for the recheck interval (an operator's switch off and on between two ticks leaves the record waiting for a
// phase this replica never saw change), and again at the next tick after the record failed; not at every tick.
func TestQueueEventsObserve(t *testing.T) {
	rec := &phaseLog{}
	nudged := 0
	q := newQueueEvents(rec, func() { nudged++ }, slog.New(slog.DiscardHandler))
	q.recheck = time.Hour
	tick := func(show string, phase waitroom.Phase) {
		q.observe(waitroom.TickResult{Show: show, Phase: phase, At: time.Now()}, 0, nil)
	}
	tick("a", waitroom.PhaseOpen)
	tick("a", waitroom.PhaseOpen)
	tick("b", waitroom.PhaseOpen)
	tick("a", waitroom.PhaseSoldOut)
	tick("a", waitroom.PhaseSoldOut)
	q.observe(waitroom.TickResult{Show: "a", Phase: waitroom.PhaseOpen}, 0, errors.New("tick failed")) // ignored
	rec.fail = true
	tick("a", waitroom.PhaseOpen)
	rec.fail = false
	tick("a", waitroom.PhaseOpen) // the record failed last time: told again
	q.recheck = 0
	tick("a", waitroom.PhaseOpen) // unchanged, but the recheck is due
	want := []string{"a:open", "b:open", "a:sold_out", "a:open", "a:open", "a:open"}
	if !slices.Equal(rec.told, want) {
		t.Fatalf("the record was told %v, want %v", rec.told, want)
	}
	if nudged != 5 {
		t.Fatalf("the relay was nudged %d times, want 5 (once per recorded change)", nudged)
	}
}
