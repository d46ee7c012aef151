package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldUpstream answers seat-map reads with the number of its fetch, each held until the test releases it.
type heldUpstream struct {
	fetches atomic.Int64
	arrived chan int64
	release chan struct{}
	status  int
}

func newHeldUpstream(t *testing.T, status int) (*heldUpstream, *httptest.Server) {
	h := &heldUpstream{arrived: make(chan int64, 16), release: make(chan struct{}, 16), status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.fetches.Add(1)
		h.arrived <- n
		<-h.release
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(h.status)
		_ = json.NewEncoder(w).Encode(map[string]int64{"fetch": n})
	}))
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *heldUpstream) await(t *testing.T) int64 {
	t.Helper()
	select {
	case n := <-h.arrived:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no fetch reached the upstream")
	}
	return 0
}

// seatMapFetch reads a seat map through the edge and returns the status and the number of the fetch that answered.
func seatMapFetch(t *testing.T, url string) (int, int64, string) {
	resp, body := do(t, "GET", url, "", nil)
	var b struct{ Fetch int64 }
	_ = json.Unmarshal(body, &b)
	return resp.StatusCode, b.Fetch, resp.Header.Get("X-Request-Id")
}

// Seat-map reads that arrive while a fetch is in flight share the next one, which starts after they arrived: each
// is answered by a fetch that began after the request reached the edge, and each keeps its own request id.
func TestSeatMapReadsShareAFetch(t *testing.T) {
	t.Parallel()
	up, srv := newHeldUpstream(t, http.StatusOK)
	edge := startEdge(t, map[string]string{"BOOKING_URL": srv.URL})
	url := edge + "/api/v1/shows/" + newShow(t, testRedis(t)) + "/seats"

	type answer struct {
		status int
		fetch  int64
		id     string
	}
	first := make(chan answer, 1)
	go func() { s, f, id := seatMapFetch(t, url); first <- answer{s, f, id} }()
	if n := up.await(t); n != 1 {
		t.Fatalf("fetch %d, want 1", n)
	}
	// Two more readers while fetch 1 is held: they must not be given fetch 1, which began before they arrived.
	var wg sync.WaitGroup
	later := make([]answer, 2)
	for i := range later {
		wg.Go(func() { s, f, id := seatMapFetch(t, url); later[i] = answer{s, f, id} })
	}
	time.Sleep(time.Second) // time for both to reach the edge and wait there
	up.release <- struct{}{}
	a := <-first
	if a.status != 200 || a.fetch != 1 {
		t.Fatalf("first reader: %+v, want 200 from fetch 1", a)
	}
	up.await(t)
	up.release <- struct{}{} // fetch 2; a third, if any, is released too
	up.release <- struct{}{}
	wg.Wait()
	for _, l := range later {
		if l.status != 200 || l.fetch < 2 {
			t.Fatalf("later reader: %+v, want 200 from a fetch after fetch 1", l)
		}
	}
	if later[0].fetch != later[1].fetch || up.fetches.Load() != 2 {
		t.Errorf("later readers answered by fetches %d and %d, %d fetches in all; want one shared fetch, 2 in all",
			later[0].fetch, later[1].fetch, up.fetches.Load())
	}
	if later[0].id == later[1].id || later[0].id == a.id || later[0].id == "" {
		t.Errorf("request ids %q, %q, %q: want each its own", a.id, later[0].id, later[1].id)
	}
}

// An answer other than a 200 is never shared: each reader waiting for it is forwarded on its own.
func TestSeatMapErrorIsNotShared(t *testing.T) {
	t.Parallel()
	up, srv := newHeldUpstream(t, http.StatusNotFound)
	edge := startEdge(t, map[string]string{"BOOKING_URL": srv.URL})
	url := edge + "/api/v1/shows/" + newShow(t, testRedis(t)) + "/seats"
	for range 8 {
		up.release <- struct{}{} // no fetch is held: only the count matters here
	}
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range statuses {
		wg.Go(func() { statuses[i], _, _ = seatMapFetch(t, url) })
	}
	wg.Wait()
	if got := up.fetches.Load(); got != 3 {
		t.Fatalf("%d fetches for 3 readers answered 404, want 3", got)
	}
	for _, s := range statuses {
		if s != http.StatusNotFound {
			t.Fatalf("status %d, want the upstream's 404", s)
		}
	}
}
