package token

import (
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// verifiedCache remembers what a verification of a raw token found (a user id, an admission's claims), keyed by the
// raw token, so that a token sent again is not checked again: a fan in a flash crowd sends many requests with the
// same tokens, and their signatures cost more CPU than anything but the sockets.
//
// An entry lasts until the token's own expiry (no leeway: the verifier's clock-skew leeway applies only to tokens
// it checks itself) and at most ttl, so a key an issuer retires stops being trusted soon after. Only accepted
// tokens are kept; a forged or expired one is checked, and refused, every time. The cache is a bounded LRU: when
// full it forgets the token least recently used (to within promoteEvery), never the whole crowd at once.
type verifiedCache[T any] struct {
	ttl time.Duration
	lru *lru.Cache[string, *verified[T]]
	now func() time.Time // tests move the clock
}

type verified[T any] struct {
	v     T
	until time.Time
	used  atomic.Int64 // unix nanoseconds when the entry last moved to the front of the LRU
}

// promoteEvery is how often a token in use moves to the front of the LRU. Every request of a crowd reads the
// cache: a lookup that moved the entry would take the cache's exclusive lock each time, and the requests a
// process admits at once then queue on it (all of them, behind a holder the OS has descheduled). A lookup takes
// the read lock, and the exclusive one only to move a token not moved for promoteEvery.
const promoteEvery = time.Second

func newVerifiedCache[T any](size int, ttl time.Duration) *verifiedCache[T] {
	c, err := lru.New[string, *verified[T]](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, which max rules out
	}
	return &verifiedCache[T]{ttl: ttl, lru: c, now: time.Now}
}

// verify returns what check finds for raw, from the cache when it can; check returns the token's expiry beside it.
// raw may alias a buffer the caller reuses (fiber's): the cache keeps its own copy.
func (c *verifiedCache[T]) verify(raw string, check func(string) (T, time.Time, error)) (T, error) {
	now := c.now()
	if e, ok := c.lru.Peek(raw); ok {
		if now.Before(e.until) {
			if used := e.used.Load(); now.UnixNano()-used >= int64(promoteEvery) &&
				e.used.CompareAndSwap(used, now.UnixNano()) {
				c.lru.Get(raw) // to the front; one of the token's concurrent requests does it
			}
			return e.v, nil
		}
		c.lru.Remove(raw)
	}
	v, exp, err := check(raw)
	if err != nil {
		return v, err
	}
	until := now.Add(c.ttl)
	if exp.Before(until) {
		until = exp
	}
	if now.Before(until) { // a token accepted only within the leeway is not cached
		e := &verified[T]{v: v, until: until}
		e.used.Store(now.UnixNano())
		c.lru.Add(strings.Clone(raw), e)
	}
	return v, nil
}

// Len is how many tokens the cache holds.
func (c *verifiedCache[T]) Len() int { return c.lru.Len() }
