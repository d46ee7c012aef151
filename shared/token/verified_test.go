package token

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// A remembered admission token is still checked on every use for its show, its user and its expiry, and only
// tokens that passed the full check are remembered.
func TestCachedVerifier(t *testing.T) {
	t.Parallel()
	is, _ := testIssuer(t)
	const ttl = 10 * time.Second
	v := NewCachedVerifier(NewStaticKeys(is.Keys()...), 0, 3, ttl)
	now := time.Now().Truncate(time.Second)
	clock := now
	v.cache.now = func() time.Time { return clock }
	cached := func(raw string) bool { _, ok := v.cache.lru.Peek(raw); return ok }

	raw, exp, err := is.Issue("u1", "s1", "j1", now.Add(-time.Minute), time.Minute+3*time.Second) // exp now+3s
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(raw, "s1", "u1")
	if err != nil || c.ID != "j1" || !cached(raw) {
		t.Fatalf("Verify = %+v, %v, cached %v; want j1, nil, true", c, err, cached(raw))
	}
	c.ID, c.Show = "changed", "changed" // the caller's copy, not the cache's
	for _, tc := range []struct {
		name, show, user string
		want             error
	}{
		{"again", "s1", "u1", nil},
		{"another show", "s2", "u1", ErrWrongShow},
		{"another user", "s1", "u2", ErrWrongUser},
	} {
		c, err := v.Verify(raw, tc.show, tc.user)
		if !errors.Is(err, tc.want) || (err == nil && (c.ID != "j1" || c.Show != "s1")) {
			t.Errorf("%s: Verify = %+v, %v; want %v", tc.name, c, err, tc.want)
		}
	}

	if e, _ := v.cache.lru.Peek(raw); !e.until.Equal(exp) {
		t.Fatalf("entry until %s, want the token's exp %s", e.until, exp)
	}
	clock = exp // the entry ends at exp; the full check decides from there (here: no leeway, so refused)
	if _, err := v.Verify(raw, "s1", "u1"); err == nil && cached(raw) {
		t.Fatal("a token at its expiry was answered from the cache")
	}

	if _, err := v.Verify(tamper(raw), "s1", "u1"); !errors.Is(err, ErrInvalid) || cached(tamper(raw)) {
		t.Fatalf("forged: %v, cached %v; want ErrInvalid, not cached", err, cached(tamper(raw)))
	}
}

// A remembered token is refused once its exp has passed, on the real clock.
func TestCachedVerifierRefusesExpired(t *testing.T) {
	t.Parallel()
	is, _ := testIssuer(t)
	v := NewCachedVerifier(NewStaticKeys(is.Keys()...), 0, 10, time.Minute)
	exp := time.Now().Truncate(time.Second).Add(2 * time.Second)
	raw, _, _ := is.Issue("u1", "s1", "j1", exp.Add(-time.Hour), time.Hour)
	for range 3 {
		if _, err := v.Verify(raw, "s1", "u1"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if _, err := v.Verify(raw, "s1", "u1"); !errors.Is(err, ErrExpired) {
		t.Fatalf("Verify after expiry = %v; want ErrExpired", err)
	}
}

// A retired key's tokens stop being accepted once their entries' ttl has passed.
func TestCachedVerifierRetiredKey(t *testing.T) {
	t.Parallel()
	is, key := testIssuer(t)
	keys := NewStaticKeys(is.Keys()...)
	const ttl = 10 * time.Second
	v := NewCachedVerifier(keys, 0, 10, ttl)
	now := time.Now()
	clock := now
	v.cache.now = func() time.Time { return clock }
	raw, _, _ := is.Issue("u1", "s1", "j1", now, time.Hour)
	if _, err := v.Verify(raw, "s1", "u1"); err != nil {
		t.Fatal(err)
	}
	delete(keys, key.ID)
	clock = now.Add(ttl)
	if _, err := v.Verify(raw, "s1", "u1"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify after the key's retirement and ttl = %v; want ErrInvalid", err)
	}
}

func TestCachedVerifierConcurrent(t *testing.T) {
	t.Parallel()
	is, _ := testIssuer(t)
	v := NewCachedVerifier(NewStaticKeys(is.Keys()...), 0, 4, time.Minute)
	raws := make([]string, 8)
	for i := range raws {
		raws[i], _, _ = is.Issue(string(rune('a'+i)), "s1", "j", time.Now(), time.Hour)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(raws)
				if c, err := v.Verify(raws[k], "s1", string(rune('a'+k))); err != nil || c.Subject != string(rune('a'+k)) {
					t.Errorf("Verify = %+v, %v", c, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func testIssuer(t *testing.T) (*Issuer, Key) {
	t.Helper()
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return NewIssuer(key), key
}
