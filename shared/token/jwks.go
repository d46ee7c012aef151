package token

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RemoteKeys is a KeySource backed by a JWKS URL. It caches the set and refreshes it when it is older than
// refresh; on an unknown kid it refetches at most once per minInterval, so a rotation is picked up at once and a
// flood of forged kids cannot turn into a flood of fetches.
//
// Until a set has been fetched once, there is nothing to protect and nothing to check tokens with: fetches are
// then apart by a short backoff instead (retryMin after a failure, doubling to retryMax), so a replica that
// started before its issuer has the keys within a second of the issuer coming up, not minInterval later.
//
// No lock is held across the fetch, and a check of a known kid never waits for one: a stale set is refreshed in
// the background while its keys keep answering (every token check of a replica would otherwise queue behind one
// slow request to the issuer). Only a check of a kid the set lacks waits, for the one fetch that may bring it.
type RemoteKeys struct {
	url         string
	client      *http.Client
	refresh     time.Duration
	minInterval time.Duration
	fetchMax    time.Duration // one fetch's deadline
	retryMin    time.Duration // before the first set: the wait after a first failure
	retryMax    time.Duration // and the most it doubles to

	set    atomic.Pointer[keySet] // the last good set; nil before the first fetch succeeds
	failed atomic.Bool            // the last fetch failed (Unavailable)

	mu      sync.Mutex    // guards triedAt, retry and running; never held across I/O
	triedAt time.Time     // when the last fetch began
	retry   time.Duration // before the first set: the least time between two fetches, grown by each failure
	running chan struct{} // closed when the fetch under way ends; nil when none is
}

type keySet struct {
	keys      map[string]crypto.PublicKey
	fetchedAt time.Time
}

// NewRemoteKeys returns a source reading url. Keys are fetched lazily on first use.
func NewRemoteKeys(url string, client *http.Client) *RemoteKeys {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &RemoteKeys{url: url, client: client, refresh: 5 * time.Minute, minInterval: 5 * time.Second,
		fetchMax: 5 * time.Second, retryMin: 100 * time.Millisecond, retryMax: time.Second}
}

// Key implements KeySource for Ed25519 keys.
func (r *RemoteKeys) Key(kid string) (ed25519.PublicKey, bool) {
	k, ok := r.PublicKey(kid)
	if !ok {
		return nil, false
	}
	ek, ok := k.(ed25519.PublicKey)
	return ek, ok
}

// PublicKey returns the key of any supported type (Ed25519, EC P-256, RSA) with kid.
func (r *RemoteKeys) PublicKey(kid string) (crypto.PublicKey, bool) {
	now := time.Now()
	if set := r.set.Load(); set != nil {
		if k, ok := set.keys[kid]; ok {
			if now.Sub(set.fetchedAt) > r.refresh {
				r.start(context.Background(), now) // in the background: this key answers meanwhile
			}
			return k, true
		}
	}
	if done, _ := r.start(context.Background(), now); done != nil { // nil: fetched too recently to try again
		<-done
	}
	if set := r.set.Load(); set != nil {
		k, ok := set.keys[kid]
		return k, ok
	}
	return nil, false
}

// Unavailable reports that the issuer's key set is out of reach: never fetched yet, or its last fetch failed. A
// kid missing from the set then says nothing about the token (ErrKeysUnavailable).
func (r *RemoteKeys) Unavailable() bool { return r.set.Load() == nil || r.failed.Load() }

// Prefetch fetches the set now and, until one has been fetched, again after each failure (retryMin, doubling to
// retryMax), so that the first tokens a replica checks find it: booking may start before the edge whose keys it
// trusts, and its admitted fans' holds would get a 503 until a set is had. It returns nil once a set is had, or
// ctx's error when ctx ends first; a fetch it began is cancelled with ctx.
func (r *RemoteKeys) Prefetch(ctx context.Context) error {
	for r.set.Load() == nil {
		done, wait := r.start(ctx, time.Now())
		var retry <-chan time.Time // nil, never ready, while a fetch is under way
		if done == nil {
			retry = time.After(wait)
		}
		select {
		case <-done:
		case <-retry:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// start begins a fetch under ctx unless one is under way or the last one began too recently: less than
// minInterval ago once a set has been fetched; before that, less than the backoff (retry), never above
// minInterval. It returns a channel closed when the fetch under way ends, or nil and how long until a fetch may
// begin. A failed fetch keeps the last good set: tokens keep being checked while the issuer is unreachable.
func (r *RemoteKeys) start(ctx context.Context, now time.Time) (<-chan struct{}, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != nil {
		return r.running, 0
	}
	gap := r.minInterval
	if r.set.Load() == nil {
		gap = min(gap, r.retry)
	}
	if wait := gap - now.Sub(r.triedAt); wait > 0 {
		return nil, wait
	}
	r.triedAt = now
	done := make(chan struct{})
	r.running = done
	go func() {
		ctx, cancel := context.WithTimeout(ctx, r.fetchMax)
		defer cancel()
		keys, err := r.fetch(ctx)
		if err == nil {
			r.set.Store(&keySet{keys: keys, fetchedAt: now})
		}
		r.failed.Store(err != nil)
		r.mu.Lock()
		if err != nil && r.set.Load() == nil {
			r.retry = min(max(2*r.retry, r.retryMin), r.retryMax)
		}
		r.running = nil
		r.mu.Unlock()
		close(done)
	}()
	return done, 0
}

func (r *RemoteKeys) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token: jwks %s: status %d", r.url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	set, err := ParseJWKS(b)
	if err != nil {
		return nil, err
	}
	return set.PublicKeys(), nil
}

// PublicKeys decodes every supported key of s by kid: OKP Ed25519, EC P-256 and RSA. Others are skipped.
func (s JWKS) PublicKeys() map[string]crypto.PublicKey {
	out := map[string]crypto.PublicKey{}
	for _, k := range s.Keys {
		if pk, err := k.PublicKey(); err == nil {
			out[k.Kid] = pk
		}
	}
	return out
}

// PublicKey decodes k.
func (k JWK) PublicKey() (crypto.PublicKey, error) {
	b := base64.RawURLEncoding.DecodeString
	switch {
	case k.Kty == "OKP" && k.Crv == "Ed25519":
		x, err := b(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("token: bad Ed25519 key %q", k.Kid)
		}
		return ed25519.PublicKey(x), nil
	case k.Kty == "EC" && k.Crv == "P-256":
		x, err1 := b(k.X)
		y, err2 := b(k.Y)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("token: bad EC key %q", k.Kid)
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		if !pub.Curve.IsOnCurve(pub.X, pub.Y) { //nolint:staticcheck // validating untrusted input
			return nil, fmt.Errorf("token: EC key %q not on curve", k.Kid)
		}
		return pub, nil
	case k.Kty == "RSA":
		n, err1 := b(k.N)
		e, err2 := b(k.E)
		if err1 != nil || err2 != nil || len(e) > 4 {
			return nil, fmt.Errorf("token: bad RSA key %q", k.Kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	}
	return nil, fmt.Errorf("token: unsupported key type %s/%s", k.Kty, k.Crv)
}
