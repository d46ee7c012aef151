package token

import (
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// UserCache remembers the user tokens a UserVerifier accepted, keyed by the raw token: a fan in a flash crowd
// sends many requests with one token, and checking its signature on each cost the edge more CPU than anything but
// the sockets, and booking more than deciding the hold.
//
// An entry lasts until the token expires (no leeway: the verifier's clock-skew leeway applies only to tokens it
// checks itself) and at most ttl, so a key an external issuer retires stops being trusted soon after. Only
// accepted tokens are kept; a forged or expired one is checked, and refused, every time. The cache is a bounded
// LRU: when full it forgets the token least recently used, never the whole crowd at once.
type UserCache struct {
	v   *UserVerifier
	ttl time.Duration
	lru *lru.Cache[string, cachedUser]
	now func() time.Time // tests move the clock
}

type cachedUser struct {
	id    string
	until time.Time
}

// NewUserCache returns a cache of at most size tokens in front of v.
func NewUserCache(v *UserVerifier, size int, ttl time.Duration) *UserCache {
	c, err := lru.New[string, cachedUser](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, which max rules out
	}
	return &UserCache{v: v, ttl: ttl, lru: c, now: time.Now}
}

// Verify returns the user id of a valid token, as UserVerifier.Verify, from the cache when it can. raw may alias
// a buffer the caller reuses (fiber's): the cache keeps its own copy.
func (c *UserCache) Verify(raw string) (string, error) {
	now := c.now()
	if e, ok := c.lru.Get(raw); ok {
		if now.Before(e.until) {
			return e.id, nil
		}
		c.lru.Remove(raw)
	}
	id, exp, err := c.v.verify(raw)
	if err != nil {
		return "", err
	}
	until := now.Add(c.ttl)
	if exp.Before(until) {
		until = exp
	}
	if now.Before(until) { // a token accepted only within the leeway is not cached
		c.lru.Add(strings.Clone(raw), cachedUser{id: id, until: until})
	}
	return id, nil
}

// Len is how many tokens the cache holds.
func (c *UserCache) Len() int { return c.lru.Len() }
