// Package ratelimit is a token bucket per key (client address, user id) on golang.org/x/time/rate, with a bounded
// number of keys: a crowd of a million addresses, or an attacker inventing them, costs at most MaxKeys buckets.
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const shards = 32

// Limiter limits each key to Rate events per second with bursts of Burst.
//
// Keys live in two generations per shard: when the current generation is full it becomes the previous one and
// the old previous one is dropped. A key in use is moved forward on each hit, so active keys survive and idle
// ones are evicted; an evicted key starts again with a full bucket, which errs on the side of letting a fan in.
type Limiter struct {
	limit rate.Limit
	burst int
	per   int // keys per generation per shard
	seed  maphash.Seed
	shard [shards]shard
}

type shard struct {
	mu        sync.Mutex
	cur, prev map[string]*rate.Limiter
}

// New returns a limiter; ratePerSecond <= 0 disables it (Allow always succeeds). maxKeys bounds the memory.
func New(ratePerSecond float64, burst, maxKeys int) *Limiter {
	if burst < 1 {
		burst = 1
	}
	per := maxKeys / shards / 2
	if per < 16 {
		per = 16
	}
	l := &Limiter{limit: rate.Limit(ratePerSecond), burst: burst, per: per, seed: maphash.MakeSeed()}
	for i := range l.shard {
		l.shard[i].cur = map[string]*rate.Limiter{}
	}
	return l
}

// Enabled reports whether the limiter limits anything.
func (l *Limiter) Enabled() bool { return l != nil && l.limit > 0 }

// Allow takes one event for key at now. When refused it returns how long until one would be allowed. The key is
// kept, so it must not alias a buffer the caller reuses (fiber's).
func (l *Limiter) Allow(key string, now time.Time) (bool, time.Duration) {
	if !l.Enabled() {
		return true, 0
	}
	s := &l.shard[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	lim := s.get(key, l)
	if lim.AllowN(now, 1) { // the usual answer, without the Reservation a refusal needs
		s.mu.Unlock()
		return true, 0
	}
	r := lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d > 0 {
		r.CancelAt(now) // a refused request must not use up the bucket further
	}
	s.mu.Unlock()
	return d == 0, d
}

// Len returns the number of keys held, for tests and metrics.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shard {
		s := &l.shard[i]
		s.mu.Lock()
		n += len(s.cur) + len(s.prev)
		s.mu.Unlock()
	}
	return n
}

func (s *shard) get(key string, l *Limiter) *rate.Limiter {
	if lim, ok := s.cur[key]; ok {
		return lim
	}
	lim, ok := s.prev[key]
	if ok {
		delete(s.prev, key)
	} else {
		lim = rate.NewLimiter(l.limit, l.burst)
	}
	if len(s.cur) >= l.per {
		s.prev, s.cur = s.cur, make(map[string]*rate.Limiter, l.per)
	}
	s.cur[key] = lim
	return lim
}
