package booking

import (
	"context"
	"time"
)

// Loading a show's snapshot (seatcache.go) from Redis: at most one load per show at a time; in the background
// while a recent snapshot still serves, or waited for by a crowd that arrives on a stale one.

// snapshot returns the show's status no older than maxAge, or while a reload is in flight one no older than
// staleOK. At most one load per show runs at a time.
func (s *seatCache) snapshot(ctx context.Context, showID string, layout []Seat, maxAge time.Duration) (*snapshot, error) {
	e := s.entry(showID)
	if sn := e.cur.Load(); sn != nil && sn.age() <= maxAge {
		return sn, nil
	}
	e.mu.Lock()
	if sn := e.cur.Load(); sn != nil && sn.age() <= staleOK {
		// Good enough to advise with; refresh it behind the caller's back.
		loading := e.loading.Load()
		e.mu.Unlock()
		if !loading {
			s.reloadAsync(showID, layout)
		}
		return sn, nil
	}
	if e.loading.Load() {
		w := e.wait
		e.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if sn := e.cur.Load(); sn != nil {
			return sn, nil
		}
		return nil, e.err
	}
	e.mu.Unlock()
	return s.load(ctx, showID, layout)
}

// load reads the show's status and installs it as the current snapshot, unless a load is in flight already
// (then it returns nil).
func (s *seatCache) load(ctx context.Context, showID string, layout []Seat) (*snapshot, error) {
	e, ok := s.beginLoad(showID)
	if !ok {
		return nil, nil
	}
	return s.finishLoad(ctx, e, showID, layout)
}

// beginLoad marks a load of the show in flight; false if one is already.
func (s *seatCache) beginLoad(showID string) (*showSeats, bool) {
	e := s.entry(showID)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e, e.begin()
}

// begin marks a load in flight unless one is already; e.mu must be held.
func (e *showSeats) begin() bool {
	if e.loading.Load() {
		return false
	}
	e.loading.Store(true)
	e.wait = make(chan struct{})
	return true
}

func (s *seatCache) finishLoad(ctx context.Context, e *showSeats, showID string, layout []Seat) (*snapshot, error) {
	at := time.Now()
	_, index, err := s.catalog.layoutIndex(ctx, showID)
	var held, sold map[string]bool
	if err == nil {
		held, sold, err = s.catalog.status(ctx, showID, layout)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loading.Store(false)
	e.err = err
	close(e.wait)
	if err != nil {
		return nil, err
	}
	sn := newSnapshot(at, layout, index, held, sold)
	sn.inherit(e.cur.Load())
	e.cur.Store(sn)
	return sn, nil
}

// peekSnapshot returns the show's snapshot, and its entry, if one no older than maxAge is loaded; it never waits
// for Redis. A snapshot getting old is reloaded in the background.
func (s *seatCache) peekSnapshot(showID string, layout []Seat, maxAge time.Duration) (*showSeats, *snapshot, bool) {
	e := s.loaded(showID)
	if e == nil {
		return nil, nil, false
	}
	sn := e.cur.Load()
	if sn == nil {
		return nil, nil, false
	}
	age := sn.age()
	if age > refreshAfter && !e.loading.Load() {
		s.reloadAsync(showID, layout)
	}
	return e, sn, age <= maxAge
}

// freshSnapshot returns the show's snapshot no older than maxAge, and its entry. When the one at hand is older it
// loads one, or waits for the load in flight: when a sale opens, or the crowd comes back to a show after a quiet
// spell, hundreds of requests arrive together on a stale snapshot, and one read of the show's status decides them
// all far sooner than each going to the hold script. false when no fresh snapshot could be had (Redis failing,
// the request ended); the caller then decides without one.
func (s *seatCache) freshSnapshot(ctx context.Context, showID string, layout []Seat, maxAge time.Duration) (*showSeats, *snapshot, bool) {
	if e, sn, ok := s.peekSnapshot(showID, layout, maxAge); ok {
		return e, sn, true
	}
	// Twice at most: a load already in flight may have begun too long ago to be fresh enough when it ends.
	for range 2 {
		e := s.entry(showID)
		e.mu.Lock()
		if sn := e.cur.Load(); sn != nil && sn.age() <= maxAge {
			e.mu.Unlock()
			return e, sn, true
		}
		if e.begin() {
			e.mu.Unlock()
			sn, err := s.finishLoad(ctx, e, showID, layout)
			return e, sn, err == nil
		}
		w := e.wait
		e.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return nil, nil, false
		}
	}
	return s.peekSnapshot(showID, layout, maxAge)
}

// reloadAsync starts a background reload unless one is in flight; the check is made before the goroutine
// starts, so a burst of requests starts one reload, not one each.
func (s *seatCache) reloadAsync(showID string, layout []Seat) {
	e, ok := s.beginLoad(showID)
	if !ok {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := s.finishLoad(ctx, e, showID, layout); err != nil {
			s.log.Warn("reload seat snapshot", "show", showID, "err", err)
		}
	}()
}
