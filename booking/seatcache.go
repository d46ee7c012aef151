package booking

import (
	"context"
	"log/slog"
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

// altMemo maps a request key to the alternatives offered for it, up to maxMemo keys: in a flash crowd the same
// few seat requests are refused over and over, and a crowd of distinct requests must not grow it without end.
//
// base is the memo of an earlier state that had every seat free that this one has (seats were only taken since:
// a claim, a seat event, a reload that found new holds). An answer there still stands here while its seats are
// all still free: the alternatives are a function of the free seats alone, and taking other seats removes only
// candidates that lost to it (pickAlternatives). In a flash crowd seats are taken several hundred times a second,
// and without this each time sent every distinct request back to pickAlternatives.
type altMemo struct {
	m     sync.Map // request key -> *altAnswer
	n     atomic.Int32
	base  *altMemo
	depth int // of the base chain, bounded by maxMemoDepth so a long sell-out does not keep every memo alive
}

// altAnswer is a memoised answer: the seat ids offered and their positions in the layout.
type altAnswer struct {
	ids []string
	at  []int32
}

const (
	maxMemo      = 4096
	maxMemoDepth = 8
)

// after returns a memo for a state reached from the one of m by taking seats only.
func (m *altMemo) after() *altMemo {
	if m.depth >= maxMemoDepth {
		return new(altMemo)
	}
	return &altMemo{base: m, depth: m.depth + 1}
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

// inherit takes over prev's memo of alternatives when the two have the same state, and builds on it when seats
// were only taken since prev.
func (sn *snapshot) inherit(prev *snapshot) {
	switch {
	case prev == nil || len(prev.state) != len(sn.state):
	case slices.Equal(prev.state, sn.state):
		sn.alts = prev.alts
	case !freedSince(prev.state, sn.state):
		sn.alts = prev.alts.after()
	}
}

// freedSince reports whether a seat free in now was taken in before.
func freedSince(before, now []seatState) bool {
	for i, st := range now {
		if st == seatFree && before[i] != seatFree {
			return true
		}
	}
	return false
}

// alternatives returns pickAlternatives on this snapshot, memoised: in a flash crowd the same few seat requests
// are refused over and over against the same snapshot.
func (sn *snapshot) alternatives(layout []Seat, wanted []Seat) []string {
	key := make([]byte, 0, 8*len(wanted))
	for _, w := range wanted {
		key = append(key, w.ID...)
		key = append(key, 0)
	}
	if v, ok := sn.alts.m.Load(string(key)); ok {
		return v.(*altAnswer).ids
	}
	var a *altAnswer
	for m := sn.alts.base; m != nil && a == nil; m = m.base {
		if v, ok := m.m.Load(string(key)); ok {
			if a = v.(*altAnswer); !sn.allFree(a.at) {
				a = nil
				break // an older memo's answer had the same seats, or seats taken longer ago
			}
		}
	}
	if a == nil {
		a = &altAnswer{ids: pickAlternatives(layout, func(i int) bool { return sn.state[i] == seatFree }, wanted)}
		a.at = make([]int32, len(a.ids))
		for i, id := range a.ids {
			a.at[i] = int32(sn.index[id])
		}
	}
	// Load first: past the cap the counter stops moving, so it cannot wrap around on a long-lived memo.
	if sn.alts.n.Load() < maxMemo && sn.alts.n.Add(1) <= maxMemo {
		sn.alts.m.Store(string(key), a)
	}
	return a.ids
}

// allFree reports whether the seats at the layout positions are all free in the snapshot.
func (sn *snapshot) allFree(at []int32) bool {
	for _, i := range at {
		if sn.state[i] != seatFree {
			return false
		}
	}
	return true
}

// noteHeld records in the show's snapshot seats this process has just seen taken (its own successful claims, and
// the seats a refused claim found held), so the next requests for them are refused at once instead of after the
// next reload. A sold seat stays sold.
func (s *seatCache) noteHeld(showID string, seatIDs []string) { s.note(showID, seatIDs, true) }

// noteFreed records seats this process has just released (cancel, expiry), so they are offered again at once.
func (s *seatCache) noteFreed(showID string, seatIDs []string) { s.note(showID, seatIDs, false) }

func (s *seatCache) note(showID string, seatIDs []string, taken bool) {
	if len(seatIDs) == 0 {
		return
	}
	e := s.loaded(showID)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.cur.Load()
	if cur == nil {
		return
	}
	e.cur.Store(cur.with(seatIDs, taken))
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
