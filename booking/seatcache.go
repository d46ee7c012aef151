package booking

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A snapshot is a show's live seat status as read from Redis at one moment. Paths that only advise (the
// alternatives offered after a conflict, the availability shown in the catalog) and the fast refusal of holds
// share one recent snapshot per show instead of reading every seat of the show per request: in a flash crowd
// nearly every hold is for seats already taken, and reading 200 locks for each would cost Redis far more than
// the decisions themselves. A success is never decided on a snapshot: only the hold script, on the live locks,
// grants seats.
type snapshot struct {
	at    time.Time
	index map[string]int // the show's seat positions in its layout; shared, never changed
	// state is each seat's status by layout position: what was read from Redis plus what this process
	// learnt since. It is never changed once published (a change copies it), so readers need no lock.
	state []seatState
	// alts memoises the alternatives computed on this state. Snapshots with the same state share it: a reload
	// that finds nothing changed (the common case between two reloads 50 ms apart) keeps what was computed.
	alts *altMemo
}

type seatState uint8

const (
	seatFree seatState = iota
	seatHeld
	seatSold
)

func newSnapshot(at time.Time, layout []Seat, index map[string]int, held, sold map[string]bool) *snapshot {
	st := make([]seatState, len(layout))
	for i, seat := range layout {
		switch {
		case sold[seat.ID]:
			st[i] = seatSold
		case held[seat.ID]:
			st[i] = seatHeld
		}
	}
	return &snapshot{at: at, index: index, state: st, alts: new(altMemo)}
}

// taken reports whether the snapshot has the seat held or sold.
func (sn *snapshot) taken(id string) bool {
	i, ok := sn.index[id]
	return ok && sn.state[i] != seatFree
}

// statusAt is the status of the seat at a layout position.
func (sn *snapshot) statusAt(i int) SeatStatus {
	switch sn.state[i] {
	case seatSold:
		return SeatBooked
	case seatHeld:
		return SeatHeld
	}
	return SeatAvailable
}

// counts are the snapshot's seat counts.
func (sn *snapshot) counts() Counts {
	c := Counts{Total: len(sn.state)}
	for i := range sn.state {
		switch sn.statusAt(i) {
		case SeatBooked:
			c.Booked++
		case SeatHeld:
			c.Held++
		}
	}
	c.Available = c.Total - c.Held - c.Booked
	return c
}

// entry is a show's current snapshot and its reload. Readers (every hold) only load cur; loads and notes,
// a few hundred a second at most, take mu.
type showSeats struct {
	cur     atomic.Pointer[snapshot] // nil before the first load
	mu      sync.Mutex
	err     error         // of the last load
	loading atomic.Bool   // written under mu; read without it by peekSnapshot
	wait    chan struct{} // closed when the load in progress ends
	// conflicts counts refused holds not yet added to the show's counter in Redis (flushInfo).
	conflicts atomic.Int64
	// mine is when this process last changed each seat itself (note), under mu: a seat event heard about such a
	// seat within echoWindow may be the echo of an earlier change of this process, overtaken by a later one
	// (heard).
	mine map[string]time.Time
}

// seatCache keeps each show's current snapshot for this process (see snapshot), reloading it from Redis through
// the catalog and amending it with what this process learns meanwhile (its own claims and releases, and the seat
// events of the other replicas). It also counts refused holds between two ShowInfo flushes.
type seatCache struct {
	catalog *Catalog // the layouts, and the live seat status a load reads
	log     *slog.Logger

	shows sync.Map // show id -> *showSeats
	n     atomic.Int64

	mu         sync.Mutex
	conflicted map[string]bool // shows with refusals counted since the last flush (countConflict)
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
	// echoWindow is how long after this process changed a seat the seat events heard about it are not trusted
	// over what the process knows (heard). Seat events reach their subscribers later than the change that
	// published them, on Redis Cluster through the cluster bus: a hold's own HELD event can arrive after the
	// same process has already cancelled the hold.
	echoWindow = time.Second
)

func (sn *snapshot) age() time.Duration { return time.Since(sn.at) }

// loaded is the show's entry, or nil when it has none (never loaded, or the cache was dropped).
func (s *seatCache) loaded(showID string) *showSeats {
	e, _ := s.shows.Load(showID)
	sn, _ := e.(*showSeats)
	return sn
}

func (s *seatCache) entry(showID string) *showSeats {
	if e := s.loaded(showID); e != nil {
		return e
	}
	if s.n.Add(1) > 10000 {
		s.n.Store(0)
		s.shows.Clear()
	}
	e, _ := s.shows.LoadOrStore(showID, &showSeats{})
	return e.(*showSeats)
}

// reserve checks the seats against the show's snapshot no older than maxAge (freshSnapshot) and when all are
// free marks them taken in it, in one step, so two requests of this process never both see a seat free. taken
// lists the seats the snapshot has taken, appended to dst (then nothing is marked), and e is the show's entry
// that decided it, for countConflict; marked reports whether the seats were marked, for the caller to hand
// back what its claim does not take. Without a fresh snapshot nothing is decided here.
func (s *seatCache) reserve(ctx context.Context, showID string, seatIDs []string, layout []Seat, maxAge time.Duration,
	dst []string) (sn *snapshot, e *showSeats, taken []string, marked bool) {
	e, sn, ok := s.freshSnapshot(ctx, showID, layout, maxAge)
	if !ok {
		return nil, nil, nil, false
	}
	if taken = sn.takenOf(dst, seatIDs); len(taken) > 0 {
		return sn, e, taken, false // the common case in a flash crowd, decided without a lock
	}
	if e = s.loaded(showID); e == nil {
		return nil, nil, nil, false // the cache was dropped in between
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.cur.Load()
	if cur == nil || cur.age() > maxAge {
		return nil, nil, nil, false
	}
	if taken = cur.takenOf(dst, seatIDs); len(taken) > 0 {
		return cur, e, taken, false
	}
	e.cur.Store(cur.with(seatIDs, true))
	return cur, e, nil, true
}

// takenOf appends to taken the seats among ids that the snapshot has held or sold.
func (sn *snapshot) takenOf(taken, ids []string) []string {
	for _, id := range ids {
		if sn.taken(id) {
			taken = append(taken, id)
		}
	}
	return taken
}

// noteHeld records in the show's snapshot seats this process has just seen taken (the seats a refused claim found
// held), so the next requests for them are refused at once instead of after the next reload. A sold seat stays
// sold.
func (s *seatCache) noteHeld(showID string, seatIDs []string) { s.note(showID, seatIDs, true, false) }

// noteFreed records seats this process has just seen free (a lock that expired in Redis, a claim that gave its
// reservation back), so they are offered again at once.
func (s *seatCache) noteFreed(showID string, seatIDs []string) { s.note(showID, seatIDs, false, false) }

// noteClaimed records seats this process has just claimed itself; their events heard within echoWindow are
// this claim's or older (heard).
func (s *seatCache) noteClaimed(showID string, seatIDs []string) { s.note(showID, seatIDs, true, true) }

// noteReleased records seats this process has just released itself (cancel, expiry, refund); their events
// heard within echoWindow are this release's or older (heard).
func (s *seatCache) noteReleased(showID string, seatIDs []string) {
	s.note(showID, seatIDs, false, true)
}

func (s *seatCache) note(showID string, seatIDs []string, taken, own bool) {
	if len(seatIDs) == 0 {
		return
	}
	e := s.loaded(showID)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if own {
		now := time.Now()
		if e.mine == nil || len(e.mine) > 4096 {
			e.mine = pruneBefore(e.mine, now.Add(-echoWindow))
		}
		for _, id := range seatIDs {
			e.mine[id] = now
		}
	}
	cur := e.cur.Load()
	if cur == nil {
		return
	}
	e.cur.Store(cur.with(seatIDs, taken))
}

// heard records a seat event published by any replica, this one included. An event about a seat this process
// changed within echoWindow is dropped: it may be this process's own, overtaken by a later change (a hold's HELD
// event arriving after the cancel), and would then mark a free seat taken until the next reload, refusing the
// fans who ask for it. Dropping one that was really another replica's costs at most one trip to the hold
// script, whose answer notes the seat (noteHeld); a grant is never decided on the snapshot.
func (s *seatCache) heard(showID, seatID string, taken bool) {
	e := s.loaded(showID)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if at, ok := e.mine[seatID]; ok && time.Since(at) < echoWindow {
		return
	}
	if cur := e.cur.Load(); cur != nil {
		e.cur.Store(cur.with([]string{seatID}, taken))
	}
}

// pruneBefore returns m without the entries older than cutoff, or a new map if m is nil.
func pruneBefore(m map[string]time.Time, cutoff time.Time) map[string]time.Time {
	if m == nil {
		return map[string]time.Time{}
	}
	maps.DeleteFunc(m, func(_ string, at time.Time) bool { return at.Before(cutoff) })
	return m
}

// with returns a copy of the snapshot with the seats marked taken (held, unless sold) or free. The state is
// copied, never changed in place: readers may still hold the old one.
func (sn *snapshot) with(seatIDs []string, taken bool) *snapshot {
	st := slices.Clone(sn.state)
	for _, id := range seatIDs {
		i, ok := sn.index[id]
		switch {
		case !ok:
		case !taken:
			st[i] = seatFree
		case st[i] == seatFree:
			st[i] = seatHeld
		}
	}
	if slices.Equal(st, sn.state) {
		return sn // a seat noted as it already was: the memo stays good
	}
	alts := new(altMemo)
	if taken {
		alts = sn.alts.after()
	}
	return &snapshot{at: sn.at, index: sn.index, state: st, alts: alts}
}

// countConflict counts a refused hold towards the show's conflictsTotal; counts are flushed to Redis with the
// ShowInfo rewrites, so the fast refusal costs no Redis call of its own, and no lock: only a show's first
// refusal since the last flush registers the show for the next one. e is the show's entry when the caller has
// it already (reserve's), saving a second look-up of the show per refusal; nil looks it up.
func (s *seatCache) countConflict(e *showSeats, showID string) {
	if e == nil {
		e = s.entry(showID)
	}
	if e.conflicts.Add(1) != 1 {
		return
	}
	s.mu.Lock()
	if s.conflicted == nil {
		s.conflicted = map[string]bool{}
	}
	s.conflicted[showID] = true
	s.mu.Unlock()
}

// takeConflicts returns the refusals counted since the last call, by show.
func (s *seatCache) takeConflicts() map[string]int64 {
	s.mu.Lock()
	shows := s.conflicted
	s.conflicted = nil
	s.mu.Unlock()
	out := make(map[string]int64, len(shows))
	for id := range shows {
		if n := s.entry(id).conflicts.Swap(0); n > 0 {
			out[id] = n
		}
	}
	return out
}
