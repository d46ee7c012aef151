package booking

import (
	"context"
	"sync"
	"time"
)

// A snapshot is a show's live seat status as read from Redis at one moment. Paths that only advise (the
// alternatives offered after a conflict, the availability shown in the catalog) and the fast refusal of holds
// share one recent snapshot per show instead of reading every seat of the show per request: in a flash crowd
// nearly every hold is for seats already taken, and reading 200 locks for each would cost Redis far more than
// the decisions themselves. A success is never decided on a snapshot: only the hold script, on the live locks,
// grants seats.
type snapshot struct {
	at         time.Time
	held, sold map[string]bool // as read from Redis; never changed
	// over records what this process learnt since the read (true: taken, false: free); it is small and copied
	// on every change, so readers never need a lock.
	over map[string]bool
	alts sync.Map // request key -> []string: alternatives computed on this snapshot
}

// taken reports whether the snapshot has the seat held or sold.
func (sn *snapshot) taken(id string) bool {
	if v, ok := sn.over[id]; ok {
		return v
	}
	return sn.held[id] || sn.sold[id]
}

// status is the seat's status in the snapshot.
func (sn *snapshot) status(id string) SeatStatus {
	switch v, ok := sn.over[id]; {
	case ok && !v:
		return SeatAvailable
	case sn.sold[id]:
		return SeatBooked
	case (ok && v) || sn.held[id]:
		return SeatHeld
	}
	return SeatAvailable
}

type showSnap struct {
	cur     *snapshot // the last one loaded; nil before the first load
	err     error     // of the last load
	loading bool
	wait    chan struct{} // closed when the load in progress ends
}

type snapshots struct {
	mu    sync.Mutex
	shows map[string]*showSnap
}

const (
	// alternativesMaxAge is how stale the status behind a fast refusal may be; a seat freed within the last
	// alternativesMaxAge may be refused once more.
	alternativesMaxAge = 150 * time.Millisecond
	// refreshAfter is the age at which a request using a snapshot starts reloading it in the background, so a
	// busy show always has a fresh one and nobody waits for a load.
	refreshAfter = 50 * time.Millisecond
	// staleOK is how old a snapshot may be served to advisory readers while a reload is in flight.
	staleOK = time.Second
)

func (sn *snapshot) age() time.Duration { return time.Since(sn.at) }

func (sn *snapshot) free(id string) bool { return !sn.taken(id) }

func (s *Service) showSnap(showID string) *showSnap {
	if s.snaps.shows == nil {
		s.snaps.shows = map[string]*showSnap{}
	}
	e, ok := s.snaps.shows[showID]
	if !ok {
		if len(s.snaps.shows) > 10000 {
			s.snaps.shows = map[string]*showSnap{}
		}
		e = &showSnap{}
		s.snaps.shows[showID] = e
	}
	return e
}

// snapshot returns the show's status no older than maxAge, or while a reload is in flight one no older than
// staleOK. At most one load per show runs at a time.
func (s *Service) snapshot(ctx context.Context, showID string, layout []Seat, maxAge time.Duration) (*snapshot, error) {
	s.snaps.mu.Lock()
	e := s.showSnap(showID)
	if e.cur != nil && e.cur.age() <= maxAge {
		sn := e.cur
		s.snaps.mu.Unlock()
		return sn, nil
	}
	if e.cur != nil && e.cur.age() <= staleOK {
		// Good enough to advise with; refresh it behind the caller's back.
		sn, loading := e.cur, e.loading
		s.snaps.mu.Unlock()
		if !loading {
			s.reloadAsync(showID, layout)
		}
		return sn, nil
	}
	if e.loading {
		w := e.wait
		s.snaps.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.snaps.mu.Lock()
		defer s.snaps.mu.Unlock()
		if e.cur == nil {
			return nil, e.err
		}
		return e.cur, nil
	}
	s.snaps.mu.Unlock()
	return s.load(ctx, showID, layout)
}

// load reads the show's status and installs it as the current snapshot, unless a load is in flight already
// (then it returns nil).
func (s *Service) load(ctx context.Context, showID string, layout []Seat) (*snapshot, error) {
	e, ok := s.beginLoad(showID)
	if !ok {
		return nil, nil
	}
	return s.finishLoad(ctx, e, showID, layout)
}

// beginLoad marks a load of the show in flight; false if one is already.
func (s *Service) beginLoad(showID string) (*showSnap, bool) {
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	e := s.showSnap(showID)
	if e.loading {
		return nil, false
	}
	e.loading, e.wait = true, make(chan struct{})
	return e, true
}

func (s *Service) finishLoad(ctx context.Context, e *showSnap, showID string, layout []Seat) (*snapshot, error) {
	at := time.Now()
	held, sold, err := s.status(ctx, showID, layout)
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	e.loading, e.err = false, err
	close(e.wait)
	if err != nil {
		return nil, err
	}
	e.cur = &snapshot{at: at, held: held, sold: sold}
	return e.cur, nil
}

// peekSnapshot returns the show's snapshot if one no older than maxAge is loaded; it never waits for Redis. A
// snapshot getting old is reloaded in the background.
func (s *Service) peekSnapshot(showID string, layout []Seat, maxAge time.Duration) (*snapshot, bool) {
	s.snaps.mu.Lock()
	e, ok := s.snaps.shows[showID]
	if !ok || e.cur == nil {
		s.snaps.mu.Unlock()
		return nil, false
	}
	sn, loading := e.cur, e.loading
	s.snaps.mu.Unlock()
	age := sn.age()
	if age > refreshAfter && !loading {
		s.reloadAsync(showID, layout)
	}
	return sn, age <= maxAge
}

// reloadAsync starts a background reload unless one is in flight; the check is made before the goroutine
// starts, so a burst of requests starts one reload, not one each.
func (s *Service) reloadAsync(showID string, layout []Seat) {
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

// alternatives returns pickAlternatives on this snapshot, memoised: in a flash crowd the same few seat requests
// are refused over and over against the same snapshot.
func (sn *snapshot) alternatives(layout []Seat, wanted []Seat) []string {
	key := make([]byte, 0, 8*len(wanted))
	for _, w := range wanted {
		key = append(key, w.ID...)
		key = append(key, 0)
	}
	if v, ok := sn.alts.Load(string(key)); ok {
		return v.([]string)
	}
	alts := pickAlternatives(layout, sn.free, wanted)
	sn.alts.Store(string(key), alts)
	return alts
}

// noteHeld records in the show's snapshot seats this process has just seen taken (its own successful claims, and
// the seats a refused claim found held), so the next requests for them are refused at once instead of after the
// next reload. The maps are copied, never changed in place: readers may still hold the old ones.
func (s *Service) noteHeld(showID string, seatIDs []string) { s.note(showID, seatIDs, true) }

// noteFreed records seats this process has just released (cancel, expiry), so they are offered again at once.
func (s *Service) noteFreed(showID string, seatIDs []string) { s.note(showID, seatIDs, false) }

func (s *Service) note(showID string, seatIDs []string, taken bool) {
	if len(seatIDs) == 0 {
		return
	}
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	e, ok := s.snaps.shows[showID]
	if !ok || e.cur == nil {
		return
	}
	over := make(map[string]bool, len(e.cur.over)+len(seatIDs))
	for id, v := range e.cur.over {
		over[id] = v
	}
	for _, id := range seatIDs {
		over[id] = taken
	}
	e.cur = &snapshot{at: e.cur.at, held: e.cur.held, sold: e.cur.sold, over: over}
}

// countConflict counts a refused hold towards the show's conflictsTotal; counts are flushed to Redis with the
// ShowInfo rewrites, so the fast refusal costs no Redis call of its own.
func (s *Service) countConflict(showID string) {
	s.mu.Lock()
	if s.conflicts == nil {
		s.conflicts = map[string]int64{}
	}
	s.conflicts[showID]++
	s.mu.Unlock()
}
