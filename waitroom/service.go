package waitroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/token"
)

// Store keeps queues and runs their atomic steps. waitroom/redis implements it.
type Store interface {
	// Join places user in show's queue, or finds their place: idempotent. receipted is the ticket a verified
	// place receipt proves (0: none), given back if the store forgot the fan while it is still ahead.
	// ErrNoSettings, ErrNoState and *SeqsError ask the caller to restore or reserve and retry.
	Join(ctx context.Context, show, user string, receipted int64) (Entry, error)
	// Lookup finds user's place without joining; Found is false when they have none.
	Lookup(ctx context.Context, show, user string) (Entry, error)
	// Admit runs one admission tick: pops up to min(rate x elapsed, maxActive - active) fans with a live
	// heartbeat (none when maxScan is 0), skipping the others, and records a grant for each, atomically. nonce
	// makes jtis unique. The grants are unrecorded until their tokens are stored; the snapshot carries the ones
	// overdue for recording and the cursor that may be recorded (Snapshot.Overdue, DurableCursor).
	Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (Snapshot, error)
	// SaveTokens stores signed tokens beside their grants, so every replica answers with the same token, and
	// marks the grants recorded: callers save a token only once its grant is in the record. It returns the
	// show's durable cursor with them recorded (see Snapshot.DurableCursor).
	SaveTokens(ctx context.Context, show string, grants []Grant) (int64, error)
	// Grants reads the live grants of users.
	Grants(ctx context.Context, show string, users []string) (map[string]Grant, error)
	// Seqs reads the tickets of users still in the queue.
	Seqs(ctx context.Context, show string, users []string) (map[string]int64, error)
	// Touch refreshes the heartbeats of users (batched by the caller) and returns those not in the queue (left
	// it, or forgotten by a store that lost its data).
	Touch(ctx context.Context, show string, users []string) ([]string, error)
	// Seed returns the show's shuffle seed, creating it if needed.
	Seed(ctx context.Context, show, fresh string) (string, error)
	// DrawLock takes the show's draw lock for ttl; false if another replica holds it. DrawUnlock drops it.
	DrawLock(ctx context.Context, show string, ttl time.Duration) (bool, error)
	DrawUnlock(ctx context.Context, show string) error
	// PreJoiners lists the pre-opening pool.
	PreJoiners(ctx context.Context, show string) ([]string, error)
	// Place writes the drawn order as tickets 1..N and opens the queue to later joins.
	Place(ctx context.Context, show string, ordered []string, digest string) error
	// Fairness reads the draw record (without the recipe).
	Fairness(ctx context.Context, show string) (Fairness, error)
	// Counts reads the queue's counters.
	Counts(ctx context.Context, show string) (Counts, error)
	// Restore rebuilds a show's queue state from the record unless it is there; SetCeiling raises the ticket
	// ceiling to one just reserved in the record (ErrNoState if the state went meanwhile).
	Restore(ctx context.Context, show string, d Durable) error
	SetCeiling(ctx context.Context, show string, ceiling int64) error
	// Exists reports whether the show has a queue config or show info.
	Exists(ctx context.Context, show string) (bool, error)
	// Events delivers show ids whose settings or availability changed, until ctx ends.
	Events(ctx context.Context) <-chan string
}

// Record is the waiting room's durable record (PostgreSQL; waitroom/postgres): what a queue needs to be rebuilt
// after the store lost it. The operator's settings and the admissions are shared/admission's record.
type Record interface {
	// Queue reads a show's record (zero values for a queue never recorded) and the sale's opening.
	Queue(ctx context.Context, show string) (Durable, error)
	// SaveSeed records seed as the show's shuffle seed unless one is recorded; it returns the one in force.
	SaveSeed(ctx context.Context, show, seed string) (string, error)
	// SaveDraw records the written draw's participant count and digest (the first record stays).
	SaveDraw(ctx context.Context, show string, count int64, digest string) error
	// SaveCursor records the admission cursor (it only grows).
	SaveCursor(ctx context.Context, show string, cursor int64) error
	// Reserve raises the ticket ceiling to at least atLeast and by grow, and returns it.
	Reserve(ctx context.Context, show string, atLeast, grow int64) (int64, error)
}

// Durable is a queue's record: everything a rebuilt queue starts from.
type Durable struct {
	Seed         string
	Drawn        bool
	DrawCount    int64
	DrawDigest   string
	Cursor       int64 // recorded at most a second behind
	Ceiling      int64 // no ticket above it was ever handed out
	SaleStartsAt time.Time
	Grants       []Grant // live admissions
}

// Counts are the operator's view of a queue.
type Counts struct {
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admittedTotal"`
	SkippedTotal  int64 `json:"skippedTotal"`
}

// Options tune a Service; zero values take the defaults.
type Options struct {
	Tick           time.Duration // admission tick per show, default 200 ms
	Grace          time.Duration // heartbeat grace before a fan counts as gone, default 30 s
	HeartbeatEvery time.Duration // batched heartbeat flush, default 2 s
	MaxScan        int           // fans popped per tick at most (admitted + skipped), default 5000
	MaxStreams     int           // streams one fan may hold open per show on one replica, default 8
	Logger         *slog.Logger
	// Observe, if set, is told of every tick this replica runs (for metrics): its snapshot (Grants are the
	// fans this replica admitted), how long it took, and its error.
	Observe func(snap Snapshot, took time.Duration, err error)
}

// Service is the waiting room: joins, status, admission ticks, draws and the local fan-out hub.
type Service struct {
	store    Store
	record   Record
	queues   *admission.Keeper
	issuer   *token.Issuer
	receipts *token.ReceiptVerifier
	opt      Options
	log      *slog.Logger
	Hub      *Hub
	flights  singleflight.Group // restores and reservations, one at a time per show on this replica

	mu     sync.Mutex
	polled map[string]map[string]struct{} // show -> users who polled since the last heartbeat flush

	// Per-show memory, each a bounded LRU: full, it forgets the show least recently touched, never all at once
	// (which would make every show re-seed, re-log and re-record in the same tick). loggedAt and cursors are read
	// and written under mu, each check-and-set in one step.
	seeded   *lru.Cache[string, struct{}]
	loggedAt *lru.Cache[string, time.Time] // kind and show -> when its last failure was logged
	cursors  *lru.Cache[string, savedCursor]
	failedAt *lru.Cache[string, time.Time] // show -> when recording its admissions last failed here (none: it worked)
}

// Bounds of the per-show memory.
const (
	maxSeeded   = 100000
	maxLoggedAt = 10000
	maxCursors  = 100000
	maxFailedAt = 10000
)

type savedCursor struct {
	cursor int64
	at     time.Time
}

// newLRU returns an empty bounded LRU; lru.New errs only for a size below 1.
func newLRU[V any](size int) *lru.Cache[string, V] {
	c, _ := lru.New[string, V](size)
	return c
}

// New returns a service over store and its record, with the shows' settings and admissions kept by queues,
// signing admission tokens and place receipts with issuer.
func New(store Store, record Record, queues *admission.Keeper, issuer *token.Issuer, opt Options) *Service {
	if opt.Tick <= 0 {
		opt.Tick = 200 * time.Millisecond
	}
	if opt.Grace <= 0 {
		opt.Grace = 30 * time.Second
	}
	if opt.HeartbeatEvery <= 0 {
		opt.HeartbeatEvery = 2 * time.Second
	}
	if opt.MaxScan <= 0 {
		opt.MaxScan = 5000
	}
	if opt.MaxStreams <= 0 {
		opt.MaxStreams = 8
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Service{store: store, record: record, queues: queues, issuer: issuer,
		receipts: token.NewReceiptVerifier(token.NewStaticKeys(issuer.Keys()...), 5*time.Second),
		opt:      opt, log: opt.Logger, Hub: NewHub(), polled: map[string]map[string]struct{}{},
		seeded: newLRU[struct{}](maxSeeded), loggedAt: newLRU[time.Time](maxLoggedAt), cursors: newLRU[savedCursor](maxCursors),
		failedAt: newLRU[time.Time](maxFailedAt)}
}

// ValidID accepts a show id: 1 to 128 letters, digits, '_', '-', '.' or ':'. Show ids go into Redis keys (inside
// a hash tag, so no braces), cookie names and URLs; booking's ids are a subset.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
			c != '_' && c != '-' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

// ValidUser accepts a user id (a token's sub): 1 to 256 bytes without control characters. External identity
// providers use ids such as "auth0|5f3c"; user ids are only ever hash fields and values, never key names.
func ValidUser(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return false
		}
	}
	return true
}

func check(show, user string) error {
	if !ValidID(show) {
		return fmt.Errorf("%w: show id", ErrInvalid)
	}
	if !ValidUser(user) {
		return fmt.Errorf("%w: user id", ErrInvalid)
	}
	return nil
}

// Join puts user in show's queue or returns their existing place.
func (s *Service) Join(ctx context.Context, show, user string) (Place, error) {
	return s.JoinWithReceipt(ctx, show, user, "")
}

// JoinWithReceipt is Join for a fan presenting a place receipt (raw, possibly empty or invalid: then ignored).
// When the store has forgotten the fan (it lost its data) and the receipt's ticket is still ahead of the cursor,
// the fan gets that ticket back. The place returned carries a receipt for the place now held.
func (s *Service) JoinWithReceipt(ctx context.Context, show, user, receipt string) (Place, error) {
	if err := check(show, user); err != nil {
		return Place{}, err
	}
	presented := s.verifyReceipt(show, user, receipt)
	for attempt := 0; ; attempt++ {
		e, err := s.join(ctx, show, user, presented.seq)
		if err != nil {
			return Place{}, err
		}
		if e.Pre {
			// Normally committed when the operator switched the queue on; this covers queues switched on
			// by other means. Either way it exists before the sale opens.
			if err := s.ensureSeed(ctx, show); err != nil {
				return Place{}, err
			}
		}
		if !e.Pending {
			s.Hub.Touch(show)
			p, err := s.place(ctx, show, e)
			if err != nil {
				return Place{}, err
			}
			p.Receipt = s.receipt(show, user, p, receipt, presented)
			return p, nil
		}
		// The sale has opened but the pre-opening draw is not written: help write it, then retry. Joins after
		// opening must get tickets after every pre-opening fan, so they cannot go ahead of the draw.
		if err := s.Draw(ctx, show); err != nil && !errors.Is(err, ErrDrawPending) {
			return Place{}, err
		}
		if attempt >= 50 {
			return Place{}, ErrDrawPending
		}
		select {
		case <-ctx.Done():
			return Place{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// join runs the store's join, restoring what the store lost and reserving tickets as it asks.
func (s *Service) join(ctx context.Context, show, user string, receipted int64) (Entry, error) {
	for attempt := 0; ; attempt++ {
		e, err := s.store.Join(ctx, show, user, receipted)
		if err == nil {
			return e, nil
		}
		if attempt >= 5 {
			return Entry{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		switch rerr := s.recover(ctx, show, err); {
		case errors.Is(rerr, errQueueOff):
			return s.closed(ctx, show)
		case rerr != nil:
			return Entry{}, rerr
		}
	}
}

// closed answers a join or lookup for a show whose record says the queue is off.
func (s *Service) closed(ctx context.Context, show string) (Entry, error) {
	ok, err := s.store.Exists(ctx, show)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, ErrUnknownShow
	}
	return Entry{Status: Closed, Found: true}, nil
}

// Status returns user's place without joining; ErrNotInQueue when they have none. The poll counts as a heartbeat.
func (s *Service) Status(ctx context.Context, show, user string) (Place, error) {
	p, err := s.Inspect(ctx, show, user)
	if err != nil {
		return Place{}, err
	}
	s.Hub.Touch(show)
	s.mu.Lock()
	m := s.polled[show]
	if m == nil {
		m = map[string]struct{}{}
		s.polled[show] = m
	}
	m[user] = struct{}{}
	s.mu.Unlock()
	return p, nil
}

// Inspect returns user's place for an operator: as Status, but it is not the fan's heartbeat, so looking a fan
// up does not keep an absent fan's turn alive. ErrNotInQueue when they have none.
func (s *Service) Inspect(ctx context.Context, show, user string) (Place, error) {
	if err := check(show, user); err != nil {
		return Place{}, err
	}
	var e Entry
	for attempt := 0; ; attempt++ {
		var err error
		if e, err = s.store.Lookup(ctx, show, user); err == nil {
			break
		}
		if attempt >= 5 {
			return Place{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if rerr := s.recover(ctx, show, err); errors.Is(rerr, errQueueOff) {
			if e, err = s.closed(ctx, show); err != nil {
				return Place{}, err
			}
			break
		} else if rerr != nil {
			return Place{}, rerr
		}
	}
	if !e.Found {
		return Place{}, ErrNotInQueue
	}
	return s.place(ctx, show, e)
}

// StatusWithReceipt is Status for a fan presenting a place receipt: a fan the store no longer knows (it lost its
// data) whose receipt is valid is joined back at the receipted place rather than told to join again.
func (s *Service) StatusWithReceipt(ctx context.Context, show, user, receipt string) (Place, error) {
	p, err := s.Status(ctx, show, user)
	if errors.Is(err, ErrNotInQueue) && s.verifyReceipt(show, user, receipt).ok {
		return s.JoinWithReceipt(ctx, show, user, receipt)
	}
	return p, err
}

// Watch joins (idempotently, presenting receipt) and subscribes a local stream; the caller must Unwatch.
func (s *Service) Watch(ctx context.Context, show, user, receipt string) (*Watcher, Place, error) {
	p, err := s.JoinWithReceipt(ctx, show, user, receipt)
	if err != nil {
		return nil, Place{}, err
	}
	w, err := s.Hub.Add(show, user, p, s.opt.MaxStreams)
	return w, p, err
}

// Unwatch ends a local stream's subscription. Its heartbeat stops with it: if the fan does not come back within
// the grace period, their turn is skipped.
func (s *Service) Unwatch(w *Watcher) { s.Hub.Remove(w) }

func (s *Service) place(ctx context.Context, show string, e Entry) (Place, error) {
	p := Place{Status: e.Status, Seq: e.Seq, OpensAt: e.OpensAt, Paused: e.Paused}
	switch {
	case e.Status == Admitted && e.Grant != nil:
		g := *e.Grant
		if g.Token == "" {
			// The replica that admitted this fan has not recorded the admission yet (or died first): record it
			// here, then sign. Ed25519 is deterministic and the claims come from the grant, so this is the very
			// token it would store. While the record cannot be written the fan is answered 503 and asks again.
			gs := []Grant{g}
			if _, err := s.issue(ctx, show, gs); err != nil {
				return Place{}, err
			}
			g = gs[0]
		}
		p.Grant = &g
	case e.Status == Waiting && e.Seq > 0:
		p.Position = Position(e.Seq, e.Cursor)
		if e.Paused {
			break // no ETA while nobody is admitted
		}
		r, ok, conf := s.Hub.Rate(show)
		if conf == 0 {
			conf = e.AdmitPerSecond
		}
		p.ETA = ETA(p.Position, r, ok, conf)
	case e.Status == Waiting && !e.OpensAt.IsZero():
		if d := time.Until(e.OpensAt); d > 0 {
			p.ETA = d
		}
	}
	return p, nil
}

func (s *Service) sign(g *Grant, show string) error {
	raw, _, err := s.issuer.Issue(g.UserID, show, g.JTI, g.IssuedAt, g.ExpiresAt.Sub(g.IssuedAt))
	if err != nil {
		return fmt.Errorf("waitroom: sign admission: %w", err)
	}
	g.Token = raw
	return nil
}

func (s *Service) ensureSeed(ctx context.Context, show string) error {
	if s.seeded.Contains(show) {
		return nil
	}
	fresh, err := NewSeed()
	if err != nil {
		return err
	}
	// The record first: the commitment must survive Redis, or a rebuilt queue would draw with another seed.
	seed, err := s.record.SaveSeed(ctx, show, fresh)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, err := s.store.Seed(ctx, show, seed); err != nil {
		return err
	}
	s.seeded.Add(show, struct{}{})
	return nil
}

// Draw writes the pre-opening order if the sale has opened and nobody has yet. Exactly one replica draws (a
// lock); a crash mid-way is harmless because the order is a pure function of seed and pool, so the next
// drawer writes the same tickets again.
func (s *Service) Draw(ctx context.Context, show string) (err error) {
	ok, err := s.store.DrawLock(ctx, show, time.Minute)
	if err != nil {
		return err
	}
	if !ok {
		return ErrDrawPending
	}
	defer func() {
		if err != nil { // let the next replica try at once rather than when the lock expires
			_ = s.store.DrawUnlock(context.WithoutCancel(ctx), show)
		}
	}()
	seed, err := s.store.Seed(ctx, show, "")
	if err != nil {
		return err
	}
	pool, err := s.store.PreJoiners(ctx, show)
	if err != nil {
		return err
	}
	ordered, err := Order(seed, pool)
	if err != nil {
		return err
	}
	// The draw hands out len(ordered) tickets at once: reserve them in the record first.
	c, err := s.record.Reserve(ctx, show, 0, int64(len(ordered)))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := s.store.SetCeiling(ctx, show, c); err != nil {
		return err
	}
	digest := ParticipantsDigest(ordered)
	if err := s.store.Place(ctx, show, ordered, digest); err != nil {
		return err
	}
	if err := s.record.SaveDraw(ctx, show, int64(len(ordered)), digest); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Fairness returns the show's shuffle record: the seed only once the draw is written.
func (s *Service) Fairness(ctx context.Context, show string) (Fairness, error) {
	if !ValidID(show) {
		return Fairness{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	if ok, err := s.store.Exists(ctx, show); err != nil {
		return Fairness{}, err
	} else if !ok {
		return Fairness{}, ErrUnknownShow
	}
	if err := s.ensureSeed(ctx, show); err != nil {
		return Fairness{}, err
	}
	f, err := s.store.Fairness(ctx, show)
	if err != nil {
		return Fairness{}, err
	}
	if !f.Drawn {
		f.Seed = ""
	}
	f.Recipe = Recipe
	return f, nil
}

// Settings returns a show's settings and counters.
func (s *Service) Settings(ctx context.Context, show string) (admission.Settings, Counts, error) {
	if !ValidID(show) {
		return admission.Settings{}, Counts{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	st, err := s.queues.Settings(ctx, show)
	if err != nil {
		return st, Counts{}, err
	}
	c, err := s.store.Counts(ctx, show)
	return st, c, err
}

// UpdateSettings changes a show's settings with fn, which must validate what it returns: recorded first, then
// cached, and every replica applies them within a tick. Turning a queue on commits its shuffle seed first, so the
// commitment is public before anyone can join. It returns the settings before and after.
func (s *Service) UpdateSettings(ctx context.Context, show string, fn func(admission.Settings) (admission.Settings, error)) (old, now admission.Settings, err error) {
	if !ValidID(show) {
		return old, now, fmt.Errorf("%w: show id", ErrInvalid)
	}
	old, now, err = s.queues.Update(ctx, show, func(cur admission.Settings) (admission.Settings, error) {
		next, err := fn(cur)
		if err != nil {
			return next, err
		}
		if next.Enabled {
			if err := s.ensureSeed(ctx, show); err != nil {
				return next, err
			}
		}
		return next, nil
	})
	if err != nil {
		return old, now, err
	}
	s.Hub.Touch(show)
	return old, now, nil
}

// Kick revokes the admission jti of show (an operator's decision): its token is refused from then on.
func (s *Service) Kick(ctx context.Context, show, jti string) (admission.Grant, error) {
	if !ValidID(show) || jti == "" || len(jti) > 128 {
		return admission.Grant{}, fmt.Errorf("%w: show or admission id", ErrInvalid)
	}
	return s.queues.Kick(ctx, show, jti)
}

// KickUser revokes every live admission of user to show, including one this replica's store holds that the
// record may not have yet.
func (s *Service) KickUser(ctx context.Context, show, user string) ([]admission.Grant, error) {
	if err := check(show, user); err != nil {
		return nil, err
	}
	gs, err := s.store.Grants(ctx, show, []string{user})
	if err != nil {
		return nil, err
	}
	var extra []admission.Grant
	for _, g := range gs {
		extra = append(extra, admission.Grant{ShowID: show, JTI: g.JTI, UserID: g.UserID, IssuedAt: g.IssuedAt,
			ExpiresAt: g.ExpiresAt})
	}
	return s.queues.KickUser(ctx, show, user, extra...)
}

// Tick runs one admission tick for show on this replica: the script, then signing and storing the new grants,
// then the local fan-out. pulse makes every local stream re-send its position even if nothing moved.
func (s *Service) Tick(ctx context.Context, show string, pulse bool) (snap Snapshot, err error) {
	if s.opt.Observe != nil {
		start := time.Now()
		defer func() { s.opt.Observe(snap, time.Since(start), err) }()
	}
	// Nobody is admitted while this replica cannot record admissions: their tokens could not be handed out, and
	// the tokens' time would run while the fans wait for them.
	maxScan := s.opt.MaxScan
	if s.recordFailing(show) {
		maxScan = 0
	}
	snap, err = s.store.Admit(ctx, show, nonce(), s.opt.Grace, maxScan)
	// The store lost the show's state (settings, then the queue's own): restore and tick again. Until it is back
	// nothing is sent to the show's streams, so fans keep their places on screen and are never told "closed".
	for attempt := 0; attempt < 3 && (errors.Is(err, ErrNoSettings) || errors.Is(err, ErrNoState)); attempt++ {
		switch rerr := s.recover(ctx, show, err); {
		case errors.Is(rerr, errQueueOff):
			snap, err = Snapshot{Show: show, Phase: PhaseClosed, At: time.Now()}, nil
		case rerr != nil:
			return snap, rerr
		default:
			snap, err = s.store.Admit(ctx, show, nonce(), s.opt.Grace, maxScan)
		}
	}
	if err != nil {
		return snap, err
	}
	// Record, then sign and store the tokens, then deliver: no fan is handed a token for an admission the record
	// lacks (durable.go). A failure leaves the grants unrecorded in the store; the first tick after overdueAfter
	// hands them out again, on whichever replica runs it.
	delivered, err := s.issueTick(ctx, &snap)
	if err != nil {
		s.logFailure("record admissions", show, err)
	} else {
		s.recordCursor(ctx, show, snap)
	}
	if snap.Phase == PhasePending {
		if err := s.Draw(ctx, show); err != nil && !errors.Is(err, ErrDrawPending) {
			s.logFailure("draw", show, err)
		}
	}
	local := snap
	local.Grants = delivered
	needSeq, needGrant := s.Hub.Update(local, pulse)
	if len(needSeq) > 0 {
		seqs, err := s.store.Seqs(ctx, show, needSeq)
		if err != nil {
			return snap, err
		}
		s.Hub.SetSeq(show, seqs)
		// Streaming fans with no ticket (they arrived while the show was sold out, or were skipped in a
		// race with their heartbeat) are live and want in: join them now, once.
		var missing []string
		for _, u := range needSeq {
			if _, ok := seqs[u]; !ok {
				missing = append(missing, u)
			}
		}
		if err := s.rejoin(ctx, show, missing); err != nil {
			return snap, err
		}
	}
	if len(needGrant) > 0 {
		if err := s.resolveGrants(ctx, show, needGrant); err != nil {
			return snap, err
		}
	}
	return snap, nil
}

// resolveGrants finds the grants of local fans another replica admitted. A fan the cursor passed without a grant
// was skipped while streaming (a heartbeat raced the tick): they are live, so they join again.
func (s *Service) resolveGrants(ctx context.Context, show string, users []string) error {
	gs, err := s.store.Grants(ctx, show, users)
	if err != nil {
		return err
	}
	// Grants without a token are not recorded yet: record them here before anyone sees a token. While this
	// replica cannot record, their fans wait (they are admitted, not missing) and the overdue pass retries.
	var unrecorded []Grant
	for _, g := range gs {
		if g.Token == "" {
			unrecorded = append(unrecorded, g)
		}
	}
	if len(unrecorded) > 0 && !s.recordFailing(show) {
		if _, err := s.issue(ctx, show, unrecorded); err != nil {
			return err
		}
		for _, g := range unrecorded {
			gs[g.UserID] = g
		}
	}
	ready := make(map[string]Grant, len(gs))
	for u, g := range gs {
		if g.Token != "" {
			ready[u] = g
		}
	}
	s.Hub.SetGrants(show, ready)
	var missing []string
	for _, u := range users {
		if _, ok := gs[u]; !ok {
			missing = append(missing, u)
		}
	}
	return s.rejoin(ctx, show, missing)
}

// rejoin joins live local fans who have neither a ticket nor a grant, and hands their watchers the result.
func (s *Service) rejoin(ctx context.Context, show string, users []string) error {
	tickets := make(map[string]int64, len(users))
	for _, u := range users {
		tickets[u] = 0
	}
	return s.rejoinAt(ctx, show, tickets)
}

// rejoinAt joins live local fans again, each at the ticket it held (0: none; a ticket the cursor has passed is
// not given back), and hands their watchers the result.
func (s *Service) rejoinAt(ctx context.Context, show string, tickets map[string]int64) error {
	seqs := map[string]int64{}
	for u, ticket := range tickets {
		e, err := s.join(ctx, show, u, ticket)
		if err != nil {
			return err
		}
		if e.Grant != nil {
			p, err := s.place(ctx, show, e) // signs the token if its admitter has not stored it yet
			if err != nil {
				return err
			}
			s.Hub.SetGrants(show, map[string]Grant{u: *p.Grant})
		} else if e.Seq > 0 {
			seqs[u] = e.Seq
		}
	}
	if len(seqs) > 0 {
		s.Hub.reseq(show, seqs)
	}
	return nil
}

func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run ticks every show this replica has fans of (streams, or joins and polls in the last minute) until ctx
// ends, flushes heartbeats in batches, and reacts at once to settings and availability changes. A replica with no
// fans of a show has nothing to tell anyone about it, and the admission rate does not depend on which replicas
// tick (admit.lua), so no global registry of queues is needed.
func (s *Service) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opt.Tick)
	defer tick.Stop()
	hb := time.NewTicker(s.opt.HeartbeatEvery)
	defer hb.Stop()
	events := s.store.Events(ctx)
	var lastPulse time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case show, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ValidID(show) && s.Hub.Knows(show) {
				if _, err := s.Tick(ctx, show, true); err != nil && ctx.Err() == nil {
					s.logFailure("tick", show, err)
				}
			}
		case <-hb.C:
			s.flushHeartbeats(ctx)
		case now := <-tick.C:
			pulse := now.Sub(lastPulse) >= 500*time.Millisecond // streams refresh at least every 2 s
			if pulse {
				lastPulse = now
			}
			for _, show := range s.Hub.Shows() {
				if _, err := s.Tick(ctx, show, pulse); err != nil && ctx.Err() == nil {
					s.logFailure("tick", show, err)
				}
			}
		}
	}
}

func (s *Service) flushHeartbeats(ctx context.Context) {
	s.mu.Lock()
	polled := s.polled
	s.polled = map[string]map[string]struct{}{}
	s.mu.Unlock()
	shows := map[string]bool{}
	for show := range polled {
		shows[show] = true
	}
	for _, show := range s.Hub.Shows() {
		shows[show] = true
	}
	for show := range shows {
		users := s.Hub.Users(show)
		for u := range polled[show] {
			users = append(users, u)
		}
		if len(users) == 0 {
			continue
		}
		missing, err := s.store.Touch(ctx, show, dedupe(users))
		if err != nil {
			if ctx.Err() == nil {
				s.logFailure("heartbeat", show, err)
			}
			continue
		}
		// A fan streaming from here with a ticket and no grant is waiting in line; missing from the queue, the
		// store lost it (a Redis restarted empty, restored from the record without the fans). The stream stays
		// open, so the fan will not come back with its receipt: put it back at the ticket it holds, which its
		// receipt proves and this replica was told by the store.
		if tickets := s.Hub.waiting(show, missing); len(tickets) > 0 {
			if err := s.rejoinAt(ctx, show, tickets); err != nil && ctx.Err() == nil {
				s.logFailure("restore streams", show, err)
			}
		}
	}
}

// logFailure logs a background failure at most every 10 s per show and kind: with Redis down, every tick of every
// show fails five times a second, and one line says it.
func (s *Service) logFailure(kind, show string, err error) {
	key := kind + " " + show
	now := time.Now()
	s.mu.Lock()
	last, seen := s.loggedAt.Get(key)
	if !seen || now.Sub(last) >= 10*time.Second {
		s.loggedAt.Add(key, now)
	}
	s.mu.Unlock()
	if seen && now.Sub(last) < 10*time.Second {
		return
	}
	s.log.Error("waitroom: "+kind, "show", show, "err", err)
}
