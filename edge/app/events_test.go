package app

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/rediskey"
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
