package admission

import (
	"context"
	"fmt"
	"sync"
)

// revocations batches the gate's revocation lookups by show: in a flash crowd every gated request of a show asks
// whether its own token was revoked, and one Redis round trip each ran a starved edge's small pool dry. Lookups
// that arrive while a show's round trip is in flight are gathered and sent together, in one round trip, when it
// ends; a lookup that finds nothing in flight is sent at once, alone.
//
// Never an answer read before a lookup began: a lookup joins only the batch not yet sent, never the one in
// flight, so a revocation made before the lookup began is always in its answer (as edge/http/collapse.go does
// for seat maps). A lookup waits for at most the round trip in flight and its own, and stops waiting when its
// context ends; the round trip is not its own (it runs on a context of its own, bounded by flightTimeout), so a
// caller giving up fails no other. A batch holds at most the lookups in flight at once.
type revocations struct {
	cache Cache

	mu    sync.Mutex
	shows map[string]*lane // an entry lives while a round trip for the show is in flight
}

// lane is one show's round trips: whether one is in flight, and the batch that is sent when it ends.
type lane struct {
	sending bool
	next    *batch
}

// batch is one round trip's token ids and its answer, set before done is closed.
type batch struct {
	jtis    []string
	done    chan struct{}
	revoked []bool
	cached  bool
	err     error
}

// lookup reports whether the token id jti of show was revoked, and whether the show's state is cached at all
// (Cache.Revoked), from a round trip sent after lookup began. An error is the store's, or ctx's.
func (r *revocations) lookup(ctx context.Context, show, jti string) (revoked, cached bool, err error) {
	r.mu.Lock()
	l := r.shows[show]
	if l == nil {
		if r.shows == nil {
			r.shows = map[string]*lane{}
		}
		l = &lane{}
		r.shows[show] = l
	}
	b := l.next
	if b == nil {
		b = &batch{done: make(chan struct{})}
		l.next = b
	}
	i := len(b.jtis)
	b.jtis = append(b.jtis, jti)
	if !l.sending {
		l.sending, l.next = true, nil
		go r.send(context.WithoutCancel(ctx), show, l, b)
	}
	r.mu.Unlock()
	select {
	case <-b.done:
		switch {
		case b.err != nil:
			return false, false, b.err
		case i >= len(b.revoked): // a cache that broke Revoked's contract: unknown, never "not revoked"
			return false, false, fmt.Errorf("%d revocation answers for %d ids", len(b.revoked), len(b.jtis))
		}
		return b.revoked[i], b.cached, nil
	case <-ctx.Done():
		return false, false, ctx.Err()
	}
}

// send sends b, then each batch gathered meanwhile, until none is waiting.
func (r *revocations) send(ctx context.Context, show string, l *lane, b *batch) {
	for b != nil {
		rctx, cancel := context.WithTimeout(ctx, flightTimeout)
		b.revoked, b.cached, b.err = r.cache.Revoked(rctx, show, b.jtis)
		cancel()
		r.mu.Lock()
		close(b.done)
		b, l.next = l.next, nil
		if b == nil {
			l.sending = false
			delete(r.shows, show)
		}
		r.mu.Unlock()
	}
}
