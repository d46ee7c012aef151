package token

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var cacheSecret = []byte(strings.Repeat("s", MinSecretLen))

func issueUser(t *testing.T, user string, issued time.Time, ttl time.Duration) string {
	t.Helper()
	is, err := NewUserIssuer(cacheSecret)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := is.Issue(user, issued, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestUserCache(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	now := time.Now().Truncate(time.Second)
	clock := now
	// A leeway of an hour: the verifier accepts expired tokens, so only the cache's own rule refuses them below.
	c := NewUserCache(NewUserVerifier(cacheSecret, nil, time.Hour), 3, ttl)
	c.now = func() time.Time { return clock }
	cached := func(raw string) bool {
		_, ok := c.lru.Peek(raw)
		return ok
	}

	raw := issueUser(t, "u1", now.Add(-time.Minute), time.Minute+3*time.Second) // expires at now+3s
	if id, err := c.Verify(raw); err != nil || id != "u1" || !cached(raw) {
		t.Fatalf("Verify = %q, %v, cached %v; want u1, nil, true", id, err, cached(raw))
	}
	clock = now.Add(3 * time.Second) // the token's expiry, before ttl
	if _, err := c.Verify(raw); err != nil || cached(raw) {
		t.Fatalf("Verify at expiry = %v, cached %v; want nil (the leeway) and not cached again", err, cached(raw))
	}

	long := issueUser(t, "u2", now, time.Hour)
	clock = now
	if _, err := c.Verify(long); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(ttl - time.Second)
	if e, ok := c.lru.Peek(long); !ok || !e.until.Equal(now.Add(ttl)) {
		t.Fatalf("entry %+v, %v; want until now+ttl", e, ok)
	}

	expired := issueUser(t, "u3", now.Add(-time.Hour), time.Hour-time.Second) // accepted within the leeway only
	clock = now
	if _, err := c.Verify(expired); err != nil || cached(expired) {
		t.Fatalf("Verify = %v, cached %v; want nil and not cached", err, cached(expired))
	}
	if _, err := c.Verify("not.a.token"); !errors.Is(err, ErrInvalid) || cached("not.a.token") {
		t.Fatalf("Verify(junk) = %v, cached %v; want ErrInvalid, not cached", err, cached("not.a.token"))
	}

	for i := range 10 { // bounded, least recently used (to within promoteEvery) first out
		clock = now.Add(time.Duration(i) * promoteEvery)
		if _, err := c.Verify(long); err != nil { // long stays in use
			t.Fatal(err)
		}
		if _, err := c.Verify(issueUser(t, "u", now.Add(time.Duration(i)*time.Second), time.Hour)); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 3 {
			t.Fatalf("%d entries, bound 3", c.Len())
		}
	}
	if !cached(long) {
		t.Fatal("the token in use was evicted")
	}
}

// A cached token is not accepted past its expiry, on the real clock.
func TestUserCacheRefusesExpired(t *testing.T) {
	t.Parallel()
	c := NewUserCache(NewUserVerifier(cacheSecret, nil, 0), 10, time.Minute)
	exp := time.Now().Truncate(time.Second).Add(2 * time.Second)
	raw := issueUser(t, "u1", exp.Add(-time.Hour), time.Hour)
	for range 3 {
		if id, err := c.Verify(raw); err != nil || id != "u1" {
			t.Fatalf("Verify = %q, %v; want u1", id, err)
		}
	}
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if id, err := c.Verify(raw); !errors.Is(err, ErrExpired) {
		t.Fatalf("Verify after expiry = %q, %v; want ErrExpired", id, err)
	}
	if id, err := c.Verify(raw + "x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("forged token = %q, %v; want ErrInvalid", id, err)
	}
}

func TestUserCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewUserCache(NewUserVerifier(cacheSecret, nil, 0), 4, time.Minute)
	now := time.Now()
	raws := make([]string, 8)
	for i := range raws {
		raws[i] = issueUser(t, string(rune('a'+i)), now, time.Hour)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				raw := raws[(g+i)%len(raws)]
				if id, err := c.Verify(raw); err != nil || id != string(rune('a'+(g+i)%len(raws))) {
					t.Errorf("Verify = %q, %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
