package waitroom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/shared/streamcap"
)

// Hub is one replica's in-memory fan-out: the fans streaming positions from this process, grouped by show. Each
// tick it takes the show's one TickResult and every local watcher's position follows from it in memory (seq -
// cursor), so a stream costs no Redis work per update. Notifications never block: each watcher has a one-slot
// channel that coalesces, and the writer reads the latest state when it gets round to it, so a stalled client
// delays nobody and no history is kept.
type Hub struct {
	mu    sync.Mutex
	shows map[string]*hubShow
}

type hubShow struct {
	epoch time.Time // Watcher.quiet counts from here, on the monotonic clock
	// view is what Current needs of the latest tick, published once per tick, so a stream's writer reads it
	// without taking mu: every stream reads it at every tick.
	view atomic.Pointer[hubView]

	mu       sync.Mutex
	snap     TickResult
	haveSnap bool
	meter    *RateMeter
	watchers map[*Watcher]struct{}
	perUser  streamcap.Caps // streams per fan, to bound what one fan's tabs (or a script) can hold open
	lastSeen time.Time
}

// hubView is a show's latest tick as the streams see it, with the rate measured up to it.
type hubView struct {
	phase          Phase
	cursor         int64
	gap            Gap
	lines          Lines
	opensAt        time.Time
	admitPerSecond float64
	rate           float64 // RateMeter.Rate after this tick: it only changes at a tick
	rateOK         bool
}

// Watcher is one local stream's subscription: a fan of a show.
type Watcher struct {
	Show, User string
	hs         *hubShow
	onChange   atomic.Pointer[func()]
	pending    atomic.Bool // a notification came before OnChange: OnChange hands it over
	// quiet is when (ns after hs.epoch) the watcher's stream may next want to hear that the fan moved (Hush).
	quiet atomic.Int64

	// Written with hs.mu held; Current reads them without it.
	seq   atomic.Int64
	grant atomic.Pointer[Grant]
	// beatAt is when (ns after hs.epoch) the fan's heartbeat is next due (heartbeat.go); 0: not scheduled yet.
	// Read and written with hs.mu held.
	beatAt int64
}

// Update is what a stream tells its fan now.
type Update struct {
	Status   Status
	Seq      int64
	Cursor   int64
	Position int64
	ETA      time.Duration
	OpensAt  time.Time
	Grant    *Grant
	Paused   bool // admission paused by the operator: the ETA is unknown (zero)
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{shows: map[string]*hubShow{}} }

func (h *Hub) show(id string) *hubShow {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs, ok := h.shows[id]
	if !ok {
		hs = &hubShow{epoch: time.Now(), meter: NewRateMeter(30 * time.Second), watchers: map[*Watcher]struct{}{}}
		h.shows[id] = hs
	}
	return hs
}

// Touch keeps a show known to this replica (so its ticks run) even with no local stream, for a while.
func (h *Hub) Touch(show string) {
	hs := h.show(show)
	hs.mu.Lock()
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// Knows reports whether this replica follows show.
func (h *Hub) Knows(show string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.shows[show]
	return ok
}

// Shows lists the shows this replica follows: those with local streams or touched in the last minute. Shows
// idle longer are forgotten, so memory does not grow with every show ever seen.
func (h *Hub) Shows() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.shows))
	for id, hs := range h.shows {
		hs.mu.Lock()
		idle := len(hs.watchers) == 0 && time.Since(hs.lastSeen) > time.Minute
		hs.mu.Unlock()
		if idle {
			delete(h.shows, id)
			continue
		}
		out = append(out, id)
	}
	return out
}

// Add subscribes a fan with their current place. max bounds the fan's streams of this show on this replica
// (0: no bound); beyond it Add returns ErrTooManyStreams.
func (h *Hub) Add(show, user string, p Place, max int) (*Watcher, error) {
	hs := h.show(show)
	w := &Watcher{Show: show, User: user, hs: hs}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if !hs.perUser.Take([]string{user}, []int{max}) {
		return nil, ErrTooManyStreams
	}
	w.seq.Store(p.Seq)
	w.grant.Store(p.Grant)
	hs.watchers[w] = struct{}{}
	hs.lastSeen = time.Now()
	return w, nil
}

// Remove unsubscribes w.
func (h *Hub) Remove(w *Watcher) {
	w.hs.mu.Lock()
	defer w.hs.mu.Unlock()
	if _, ok := w.hs.watchers[w]; !ok {
		return
	}
	delete(w.hs.watchers, w)
	w.hs.perUser.Give(w.User)
	w.hs.lastSeen = time.Now()
}

// OnChange has every later notification (the watcher's state may have changed, or a pulse) call f, for a writer
// that keeps no goroutine per stream (waitroom/http's streams). f runs on the hub's goroutine and must not block.
// Notifications before OnChange coalesce into one, handed to f at once.
func (w *Watcher) OnChange(f func()) {
	w.onChange.Store(&f)
	if w.pending.CompareAndSwap(true, false) {
		f()
	}
}

// Hush tells the hub that until then the watcher's stream sends no new position (it sends at a bounded rate): the
// ticks that only move the fan along the line (a new cursor or a pulse, in the same phase, with a ticket and no
// grant) do not notify it before then. Anything else does. The zero time hushes nothing.
func (w *Watcher) Hush(until time.Time) {
	var q int64
	if !until.IsZero() {
		q = int64(until.Sub(w.hs.epoch))
	}
	w.quiet.Store(q)
}

func (w *Watcher) notify() {
	if f := w.onChange.Load(); f != nil {
		(*f)()
		return
	}
	w.pending.Store(true)
	// OnChange may have been called meanwhile, after it looked for a pending notification: hand it over.
	if f := w.onChange.Load(); f != nil && w.pending.CompareAndSwap(true, false) {
		(*f)()
	}
}

// Current computes the watcher's update from the latest tick result, in memory and without a lock. Its reads
// of the watcher and of the tick are each atomic, not all at once: a change between them is followed by a
// notification, and the writer reads again.
func (w *Watcher) Current() Update {
	v := w.hs.view.Load()
	u := Update{Seq: w.seq.Load(), Status: Waiting}
	if v != nil {
		u.Cursor = v.cursor
	}
	if g := w.grant.Load(); g != nil {
		u.Status, u.Grant = Admitted, g
		return u
	}
	if v == nil {
		return u
	}
	switch v.phase {
	case PhaseClosed:
		u.Status = Closed
		return u
	case PhaseSoldOut:
		u.Status = SoldOut
		return u
	case PhasePre, PhasePending:
		if u.Seq == 0 {
			u.OpensAt = v.opensAt
			u.ETA = time.Until(v.opensAt)
			if u.ETA < 0 {
				u.ETA = 0
			}
			return u
		}
	}
	if u.Seq == 0 {
		u.OpensAt = v.opensAt
		return u
	}
	u.Position = TickResult{Cursor: v.cursor, Gap: v.gap, Lines: v.lines}.Position(u.Seq)
	if v.phase == PhasePaused {
		u.Paused = true
		return u
	}
	f := v.lines.Share(u.Seq) // a lane is served at its part of the show's rate
	u.ETA = ETA(u.Position, v.rate*f, v.rateOK, v.admitPerSecond*f)
	return u
}

// Rate is the measured rate of a show on this replica, and the configured one.
func (h *Hub) Rate(show string) (measured float64, ok bool, configured float64) {
	hs := h.show(show)
	r, ok := hs.meter.Rate()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return r, ok, hs.snap.AdmitPerSecond
}

// ApplyTick applies a tick's result and notifies every local watcher of the show. It returns the fans who need
// a Redis lookup this tick, batched by the caller: those whose seq is unknown after the draw (needSeq) and those
// the cursor has passed without a grant in hand yet (needGrant). Each is looked up once per event, never per
// update.
func (h *Hub) ApplyTick(snap TickResult, pulse bool) (needSeq, needGrant []string) {
	hs := h.show(snap.Show)
	hs.meter.Observe(snap.At, snap.Gap.progress(snap.Cursor))
	hs.mu.Lock()
	samePhase := hs.haveSnap && hs.snap.Phase == snap.Phase
	changed := !samePhase || hs.snap.Cursor != snap.Cursor || hs.snap.Gap != snap.Gap ||
		hs.snap.LastSeq != snap.LastSeq && snap.Lines != nil // other lines' arrivals move a fan's position
	grants := snap.Grants
	snap.Grants = nil
	hs.snap, hs.haveSnap = snap, true
	r, ok := hs.meter.Rate()
	hs.view.Store(&hubView{phase: snap.Phase, cursor: snap.Cursor, gap: snap.Gap, lines: snap.Lines, opensAt: snap.OpensAt,
		admitPerSecond: snap.AdmitPerSecond, rate: r, rateOK: ok})
	// A tick grants a few fans (the admission rate times the tick): finding them among the watchers by comparing
	// names costs less than hashing every watcher's name at every tick. Many grants at once go through a map.
	var byUser map[string]*Grant
	if len(grants) > 16 {
		byUser = make(map[string]*Grant, len(grants))
		for i := range grants {
			byUser[grants[i].UserID] = &grants[i]
		}
	}
	grantFor := func(user string) *Grant {
		if byUser != nil {
			return byUser[user]
		}
		for i := range grants {
			if grants[i].UserID == user {
				return &grants[i]
			}
		}
		return nil
	}
	// A hushed watcher that only moves is not visited again after this loop: with streams sending a position a
	// second and ticks five times a second, most of them at most ticks.
	now := int64(time.Since(hs.epoch))
	watchers := make([]*Watcher, 0, len(hs.watchers))
	for w := range hs.watchers {
		grant, seq := w.grant.Load(), w.seq.Load()
		if grant == nil && len(grants) > 0 {
			if g := grantFor(w.User); g != nil {
				grant = g
				w.grant.Store(g)
			}
		}
		switch {
		case grant != nil:
		case seq == 0 && (snap.Phase == PhaseOpen || snap.Phase == PhasePaused):
			needSeq = append(needSeq, w.User)
		case seq > 0 && snap.Passed(seq):
			needGrant = append(needGrant, w.User)
		}
		moved := samePhase && grant == nil && seq > 0
		if (changed || pulse || grant != nil) && !(moved && now < w.quiet.Load()) {
			watchers = append(watchers, w)
		}
	}
	hs.mu.Unlock()
	for _, w := range watchers {
		w.notify()
	}
	return dedupe(needSeq), dedupe(needGrant)
}

// SetSeq records seqs found for fans of a show and notifies them.
func (h *Hub) SetSeq(show string, seqs map[string]int64) {
	h.apply(show, func(w *Watcher) bool {
		if s, ok := seqs[w.User]; ok && s > 0 && w.seq.Load() == 0 {
			w.seq.Store(s)
			return true
		}
		return false
	})
}

// SetGrants hands grants to the fans' watchers and notifies them.
func (h *Hub) SetGrants(show string, grants map[string]Grant) {
	h.apply(show, func(w *Watcher) bool {
		if g, ok := grants[w.User]; ok && w.grant.Load() == nil {
			w.grant.Store(&g)
			return true
		}
		return false
	})
}

func (h *Hub) apply(show string, f func(*Watcher) bool) {
	hs := h.show(show)
	var hit []*Watcher
	hs.mu.Lock()
	for w := range hs.watchers {
		if f(w) {
			hit = append(hit, w)
		}
	}
	hs.mu.Unlock()
	for _, w := range hit {
		w.notify()
	}
}

// Places returns the tickets of the show's local streaming fans who are waiting (0: in the pre-opening pool), as
// this replica last heard them from the store: after the store lost the queue, they are put back at these.
func (h *Hub) Places(show string) map[string]int64 {
	hs := h.show(show)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make(map[string]int64, len(hs.watchers))
	for w := range hs.watchers {
		if w.grant.Load() == nil {
			out[w.User] = max(out[w.User], w.seq.Load())
		}
	}
	return out
}

// Conns is the number of local streams, for metrics and tests.
func (h *Hub) Conns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, hs := range h.shows {
		hs.mu.Lock()
		n += len(hs.watchers)
		hs.mu.Unlock()
	}
	return n
}

func dedupe(s []string) []string {
	if len(s) < 2 {
		return s
	}
	seen := make(map[string]struct{}, len(s))
	out := s[:0]
	for _, v := range s {
		if _, ok := seen[v]; !ok {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	return out
}

// waiting returns, of users, those streaming a show from this replica with a ticket and no grant, with their
// ticket.
func (h *Hub) waiting(show string, users []string) map[string]int64 {
	if len(users) == 0 {
		return nil
	}
	want := setOf(users)
	hs := h.show(show)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := map[string]int64{}
	for w := range hs.watchers {
		if seq := w.seq.Load(); want[w.User] && w.grant.Load() == nil && seq > 0 {
			out[w.User] = seq
		}
	}
	return out
}

// reseq gives fans who joined again their new ticket.
func (h *Hub) reseq(show string, seqs map[string]int64) {
	h.apply(show, func(w *Watcher) bool {
		if s, ok := seqs[w.User]; ok && w.grant.Load() == nil {
			w.seq.Store(s)
			return true
		}
		return false
	})
}

// setOf is users as a set.
func setOf(users []string) map[string]bool {
	set := make(map[string]bool, len(users))
	for _, u := range users {
		set[u] = true
	}
	return set
}
