package token

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/store"
)

// jwksServer serves the keys of is; while block is set, each request waits until release is closed.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	is      *Issuer
	fetches atomic.Int32
	block   chan struct{} // nil: answer at once
	arrived chan struct{} // told of each blocked request
}

func newJWKSServer(t *testing.T, is *Issuer) *jwksServer {
	s := &jwksServer{is: is, arrived: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		block, is := s.block, s.is
		s.mu.Unlock()
		if block != nil {
			s.arrived <- struct{}{}
			<-block
		}
		_ = json.NewEncoder(w).Encode(is.JWKS())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(is *Issuer, block chan struct{}) {
	s.mu.Lock()
	s.is, s.block = is, block
	s.mu.Unlock()
}

// While a refresh waits on a slow issuer, checks of known keys answer from the last set; none waits for it.
func TestRemoteKeysRefreshDoesNotBlockChecks(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	srv := newJWKSServer(t, is)
	r := NewRemoteKeys(srv.URL, nil)
	r.fetchMax = time.Minute
	if _, ok := r.Key(k.ID); !ok {
		t.Fatal("key not found on the first fetch")
	}

	release := make(chan struct{})
	srv.set(is, release)
	r.refresh, r.minInterval = 0, 0 // every set is stale: the next check starts a refresh
	raw, _, _ := is.Issue("u", "s", "j", time.Now(), time.Minute)
	v := NewVerifier(r, 0)
	if _, err := v.Verify(raw, "s", "u"); err != nil {
		t.Fatalf("Verify during the refresh: %v", err)
	}
	select {
	case <-srv.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("a stale set started no refresh")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			if _, err := v.Verify(raw, "s", "u"); err != nil {
				errs <- err
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished: // the refresh is still held by the issuer
	case <-time.After(30 * time.Second):
		t.Fatal("token checks waited for the refresh")
	}
	close(release)
	close(errs)
	for err := range errs {
		t.Fatalf("Verify during the refresh: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2: one refresh at a time", n)
	}
}

// A key the set lacks is fetched at once (a rotation), and all who ask for it share one fetch; a made-up kid
// costs at most one fetch per minInterval.
func TestRemoteKeysRotation(t *testing.T) {
	t.Parallel()
	old, _ := GenerateKey()
	srv := newJWKSServer(t, NewIssuer(old))
	r := NewRemoteKeys(srv.URL, nil)
	if _, ok := r.Key(old.ID); !ok {
		t.Fatal("key not found on the first fetch")
	}
	r.mu.Lock()
	r.triedAt, r.minInterval = time.Time{}, time.Hour // one more fetch, and then none for an hour
	r.mu.Unlock()

	next, _ := GenerateKey()
	release := make(chan struct{})
	srv.set(NewIssuer(next, old.Public()), release)
	var wg sync.WaitGroup
	var found atomic.Int32
	for range 16 {
		wg.Go(func() {
			if _, ok := r.Key(next.ID); ok {
				found.Add(1)
			}
		})
	}
	<-srv.arrived
	if _, ok := r.Key(old.ID); !ok { // a known key answers while the others wait
		t.Fatal("old key refused during the fetch")
	}
	close(release)
	wg.Wait()
	if found.Load() != 16 {
		t.Fatalf("%d of 16 found the rotated key", found.Load())
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the first, one for the rotation)", n)
	}

	for range 10 {
		if _, ok := r.Key("forged"); ok {
			t.Fatal("made-up kid found")
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after made-up kids, want still 2", n)
	}
}

// While the issuer's keys cannot be fetched, a token under a kid the verifier lacks is not refused: that is an
// outage (ErrKeysUnavailable, which wraps store.ErrUnavailable), not a forgery. Once the set is fetched, the same
// token verifies, and a kid the fetched set lacks is ErrInvalid.
func TestRemoteKeysUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	srv := newJWKSServer(t, is)
	var up atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	r := NewRemoteKeys(front.URL, nil)
	r.minInterval = 0 // each check of an unknown kid may fetch again
	v := NewVerifier(r, 0)
	raw, _, _ := is.Issue("u", "s", "j", time.Now(), time.Minute)

	_, err := v.Verify(raw, "s", "u")
	if !errors.Is(err, ErrKeysUnavailable) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrInvalid) {
		t.Fatalf("issuer down: err %v, want ErrKeysUnavailable (a store outage), not ErrInvalid", err)
	}
	if !r.Unavailable() {
		t.Fatal("Unavailable false after a failed fetch")
	}

	up.Store(true)
	if _, err := v.Verify(raw, "s", "u"); err != nil {
		t.Fatalf("issuer back: %v", err)
	}
	other, _ := GenerateKey()
	forged, _, _ := NewIssuer(other).Issue("u", "s", "j", time.Now(), time.Minute)
	if _, err := v.Verify(forged, "s", "u"); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("unknown kid with the issuer up: err %v, want ErrInvalid", err)
	}

	up.Store(false) // the issuer goes again: a kid the last good set lacks is unknown, not known-bad
	if _, err := v.Verify(forged, "s", "u"); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("unknown kid with the issuer down again: err %v, want ErrKeysUnavailable", err)
	}
	if _, err := v.Verify(raw, "s", "u"); err != nil { // a known key keeps answering from the last good set
		t.Fatalf("known kid with the issuer down: %v", err)
	}
}

// Warm fetches the set in the background, so the first check finds it.
func TestRemoteKeysWarm(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	srv := newJWKSServer(t, NewIssuer(k))
	r := NewRemoteKeys(srv.URL, nil)
	r.Warm()
	deadline := time.Now().Add(10 * time.Second)
	for r.set.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Warm fetched nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r.Unavailable() {
		t.Fatal("Unavailable after a good fetch")
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}
