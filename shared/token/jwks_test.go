package token

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/store"
)

// jwksServer serves the keys of is; while block is set, each request waits until release is closed, and while
// down is, each is answered 503, as by an issuer still starting. fetches counts every request.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	is      *Issuer
	fetches atomic.Int32
	down    atomic.Bool
	block   chan struct{} // nil: answer at once
	arrived chan struct{} // told of each blocked request
}

func newJWKSServer(t *testing.T, is *Issuer) *jwksServer {
	s := &jwksServer{is: is, arrived: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.down.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
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
	srv.down.Store(true)
	r := NewRemoteKeys(srv.URL, nil)
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

	srv.down.Store(false)
	if _, err := v.Verify(raw, "s", "u"); err != nil {
		t.Fatalf("issuer back: %v", err)
	}
	other, _ := GenerateKey()
	forged, _, _ := NewIssuer(other).Issue("u", "s", "j", time.Now(), time.Minute)
	if _, err := v.Verify(forged, "s", "u"); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("unknown kid with the issuer up: err %v, want ErrInvalid", err)
	}

	srv.down.Store(true) // the issuer goes again: a kid the last good set lacks is unknown, not known-bad
	if _, err := v.Verify(forged, "s", "u"); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("unknown kid with the issuer down again: err %v, want ErrKeysUnavailable", err)
	}
	if _, err := v.Verify(raw, "s", "u"); err != nil { // a known key keeps answering from the last good set
		t.Fatalf("known kid with the issuer down: %v", err)
	}
}

// Prefetch fetches the set in the background, so the first check finds it, and returns once it has.
func TestRemoteKeysPrefetch(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	srv := newJWKSServer(t, NewIssuer(k))
	r := NewRemoteKeys(srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Prefetch(ctx); err != nil {
		t.Fatalf("Prefetch: %v", err)
	}
	if r.set.Load() == nil || r.Unavailable() {
		t.Fatal("no set after Prefetch")
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

// A replica started before its issuer (booking before the edge): while no set has ever been fetched, Prefetch
// tries again quickly, so a token verifies within about a second of the issuer coming up rather than after
// minInterval (5 s), and the issuer is not hammered meanwhile.
func TestRemoteKeysFirstFetchRetries(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	jwks := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(is.JWKS()) })
	// Each case returns the JWKS URL, what brings the issuer up, and how many requests reached it (nil: none can
	// be counted while it is down).
	tests := map[string]func(t *testing.T) (string, func(), *atomic.Int32){
		"connection refused": func(t *testing.T) (string, func(), *atomic.Int32) {
			addr := storetest.FreeAddr(t)
			return "http://" + addr + "/jwks.json", func() {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: jwks}}
				srv.Start()
				t.Cleanup(srv.Close)
			}, nil
		},
		"answering 503": func(t *testing.T) (string, func(), *atomic.Int32) {
			srv := newJWKSServer(t, is)
			srv.down.Store(true)
			return srv.URL, func() { srv.down.Store(false) }, &srv.fetches
		},
	}
	for name, issuer := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, up, fetches := issuer(t)
			r := NewRemoteKeys(url, nil)
			ctx, cancel := context.WithCancel(context.Background())
			var prefetchErr error
			prefetched := make(chan struct{})
			go func() { defer close(prefetched); prefetchErr = r.Prefetch(ctx) }()
			t.Cleanup(func() { cancel(); <-prefetched })
			v := NewVerifier(r, 0)
			raw, _, _ := is.Issue("u", "s", "j", time.Now(), time.Hour)

			for down := time.Now(); time.Since(down) < time.Second; time.Sleep(20 * time.Millisecond) {
				if _, err := v.Verify(raw, "s", "u"); !errors.Is(err, ErrKeysUnavailable) {
					t.Fatalf("issuer down: err %v, want ErrKeysUnavailable", err)
				}
			}
			// 100, 200, 400 ms apart: four in the first second, however many checks came.
			if fetches != nil {
				if n := fetches.Load(); n < 2 || n > 6 {
					t.Fatalf("%d fetches in the second the issuer was down, want a backoff's 2 to 6", n)
				}
			}

			upAt := time.Now()
			up()
			for {
				_, err := v.Verify(raw, "s", "u")
				if err == nil {
					break
				}
				if took := time.Since(upAt); took > 1500*time.Millisecond {
					t.Fatalf("token not verified %v after the issuer came up: %v", took, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("verified %v after the issuer came up", time.Since(upAt))
			select {
			case <-prefetched:
				if prefetchErr != nil {
					t.Fatalf("Prefetch: %v", prefetchErr)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Prefetch went on after the set was fetched")
			}
		})
	}
}

// Before a set has been fetched, minInterval does not hold back a check of an unknown kid (only the short
// backoff does); once there is a set, a flood of forged kids costs at most one fetch per minInterval.
func TestRemoteKeysThrottleAfterFirstSet(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	srv := newJWKSServer(t, is)
	srv.down.Store(true)
	r := NewRemoteKeys(srv.URL, nil)
	r.minInterval = time.Hour
	v := NewVerifier(r, 0)
	raw, _, _ := is.Issue("u", "s", "j", time.Now(), time.Hour)
	if _, err := v.Verify(raw, "s", "u"); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("issuer down: err %v, want ErrKeysUnavailable", err)
	}

	srv.down.Store(false) // no Prefetch: the checks themselves fetch again
	for upAt := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		_, err := v.Verify(raw, "s", "u")
		if err == nil {
			break
		}
		if time.Since(upAt) > 1500*time.Millisecond {
			t.Fatalf("token not verified %v after the issuer came up: %v", time.Since(upAt), err)
		}
	}

	r.mu.Lock()
	r.triedAt = time.Time{} // the last fetch long ago: one more may go
	r.mu.Unlock()
	before := srv.fetches.Load()
	other, _ := GenerateKey()
	forged, _, _ := NewIssuer(other).Issue("u", "s", "j", time.Now(), time.Hour)
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if _, err := v.Verify(forged, "s", "u"); !errors.Is(err, ErrInvalid) {
				t.Errorf("forged kid: err %v, want ErrInvalid", err)
			}
		})
	}
	wg.Wait()
	if n := srv.fetches.Load() - before; n != 1 {
		t.Fatalf("%d fetches for 200 forged kids, want 1 per minInterval", n)
	}
}

// Prefetch stops when its context ends, even with the issuer never up: booking's shutdown does not wait for it.
func TestRemoteKeysPrefetchStops(t *testing.T) {
	t.Parallel()
	r := NewRemoteKeys("http://"+storetest.DeadAddr(t)+"/jwks.json", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := r.Prefetch(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Prefetch: %v, want the context's error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Prefetch returned %v after its context ended", took)
	}
}
