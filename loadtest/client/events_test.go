package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestClient(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := NewTransport(16)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New(srv.URL, tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFollowResumesAfterADroppedStream(t *testing.T) {
	var conns atomic.Int32
	var lastID atomic.Value
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("access_token") != "user-1" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if conns.Add(1) == 1 {
			fmt.Fprint(w, "id: 7\nevent: position\ndata: {\"position\":3,\"etaSeconds\":1.5}\n\n")
			return // the connection drops
		}
		lastID.Store(r.Header.Get("Last-Event-ID"))
		fmt.Fprint(w, ": heartbeat\n\nid: 8\nevent: admitted\ndata: {\"admissionToken\":\"adm\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	var got []QueueEvent
	err := c.Follow(context.Background(), "user-1", "s1", "", func(ev QueueEvent) bool {
		got = append(got, ev)
		return ev.Kind != "admitted"
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Position != 3 || got[1].AdmissionToken != "adm" {
		t.Fatalf("got events %+v, want position 3 then admitted", got)
	}
	if id, _ := lastID.Load().(string); id != "7" {
		t.Errorf("got Last-Event-ID %q on reconnect, want 7", id)
	}
}

func TestFollowGivesUpOnARefusal(t *testing.T) {
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	start := time.Now()
	err := c.Follow(context.Background(), "user-1", "s1", "", func(QueueEvent) bool { return true })
	if !errors.Is(err, ErrStreamRefused) {
		t.Fatalf("got %v, want ErrStreamRefused", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s to give up on a 403, want no retries", time.Since(start))
	}
}

func TestFollowEndsWithItsContext(t *testing.T) {
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: position\ndata: {\"position\":9}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = c.Follow(ctx, "u", "s1", "", func(QueueEvent) bool { return true })
	if time.Since(start) > 3*time.Second {
		t.Errorf("Follow outlived its context by %s", time.Since(start))
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		err  error
		want string
	}{
		{"status", Result{Status: 409}, nil, "409"},
		{"timeout", Result{}, context.DeadlineExceeded, "err:timeout"},
		{"decode", Result{}, fmt.Errorf("x: %w", ErrDecode), "err:decode"},
		{"connection", Result{}, errors.New("connection refused"), "err:conn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outcome(tc.res, tc.err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTransportSpreadsSourceAddresses(t *testing.T) {
	seen := map[string]bool{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		seen[host] = true
		mu.Unlock()
		w.Header().Set("Connection", "close") // a new connection, and so a new source, per request
	}))
	t.Cleanup(srv.Close)
	c := &http.Client{Transport: NewTransport(4, Loopbacks(0, 3)...)}
	for i := 0; i < 6; i++ {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(seen) != 3 {
		t.Errorf("got connections from %v, want 3 loopback sources", seen)
	}
}
