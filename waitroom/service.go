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

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/token"
)

// Store keeps queues and runs their atomic steps. waitroom/redis implements it.
type Store interface {
	// Join places user in show's queue, or finds their place: idempotent.
	Join(ctx context.Context, show, user string) (Entry, error)
	// Lookup finds user's place without joining; Found is false when they have none.
	Lookup(ctx context.Context, show, user string) (Entry, error)
	// Admit runs one admission tick: pops up to min(rate x elapsed, maxActive - active) fans with a live
	// heartbeat, skipping the others, and records a grant for each, atomically. nonce makes jtis unique.
	Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (Snapshot, error)
	// SaveTokens stores signed tokens beside their grants, so every replica answers with the same token.
	SaveTokens(ctx context.Context, show string, grants []Grant) error
	// Grants reads the live grants of users.
	Grants(ctx context.Context, show string, users []string) (map[string]Grant, error)
	// Seqs reads the tickets of users still in the queue.
	Seqs(ctx context.Context, show string, users []string) (map[string]int64, error)
	// Touch refreshes the heartbeats of users (batched by the caller).
	Touch(ctx context.Context, show string, users []string) error
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
	// Settings and SaveSettings read and write an operator's settings; Counts the queue's counters.
	Settings(ctx context.Context, show string) (admission.Settings, error)
	SaveSettings(ctx context.Context, show string, s admission.Settings) error
	Counts(ctx context.Context, show string) (Counts, error)
	// Exists reports whether the show has a queue config or show info.
	Exists(ctx context.Context, show string) (bool, error)
	// Events delivers show ids whose settings or availability changed, until ctx ends.
	Events(ctx context.Context) <-chan string
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
	store  Store
	issuer *token.Issuer
	opt    Options
	log    *slog.Logger
	Hub    *Hub

	mu       sync.Mutex
	polled   map[string]map[string]struct{} // show -> users who polled since the last heartbeat flush
	seeded   map[string]bool
	loggedAt map[string]time.Time // show -> when its last tick failure was logged
}

// New returns a service over store, signing admission tokens with issuer.
func New(store Store, issuer *token.Issuer, opt Options) *Service {
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
	return &Service{store: store, issuer: issuer, opt: opt, log: opt.Logger, Hub: NewHub(),
		polled: map[string]map[string]struct{}{}, seeded: map[string]bool{}, loggedAt: map[string]time.Time{}}
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
	if err := check(show, user); err != nil {
		return Place{}, err
	}
	for attempt := 0; ; attempt++ {
		e, err := s.store.Join(ctx, show, user)
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
			return s.place(ctx, show, e)
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
	e, err := s.store.Lookup(ctx, show, user)
	if err != nil {
		return Place{}, err
	}
	if !e.Found {
		return Place{}, ErrNotInQueue
	}
	return s.place(ctx, show, e)
}

// Watch joins (idempotently) and subscribes a local stream; the caller must Unwatch.
func (s *Service) Watch(ctx context.Context, show, user string) (*Watcher, Place, error) {
	p, err := s.Join(ctx, show, user)
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
	p := Place{Status: e.Status, Seq: e.Seq, OpensAt: e.OpensAt}
	switch {
	case e.Status == Admitted && e.Grant != nil:
		g := *e.Grant
		if g.Token == "" {
			// The replica that admitted this fan has not stored the token yet (or died first). Ed25519 is
			// deterministic and the claims come from the grant, so this is the very token it would store.
			if err := s.sign(&g, show); err != nil {
				return Place{}, err
			}
			if err := s.store.SaveTokens(ctx, show, []Grant{g}); err != nil {
				return Place{}, err
			}
		}
		p.Grant = &g
	case e.Status == Waiting && e.Seq > 0:
		p.Position = Position(e.Seq, e.Cursor)
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
	s.mu.Lock()
	done := s.seeded[show]
	s.mu.Unlock()
	if done {
		return nil
	}
	fresh, err := NewSeed()
	if err != nil {
		return err
	}
	if _, err := s.store.Seed(ctx, show, fresh); err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.seeded) > 100000 {
		s.seeded = map[string]bool{}
	}
	s.seeded[show] = true
	s.mu.Unlock()
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
	return s.store.Place(ctx, show, ordered, ParticipantsDigest(ordered))
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
	st, err := s.store.Settings(ctx, show)
	if err != nil {
		return st, Counts{}, err
	}
	c, err := s.store.Counts(ctx, show)
	return st, c, err
}

// SaveSettings validates and stores a show's settings; every replica applies them within a tick. Turning a
// queue on commits its shuffle seed at once, so the commitment is public before anyone can join.
func (s *Service) SaveSettings(ctx context.Context, show string, st admission.Settings) error {
	if !ValidID(show) {
		return fmt.Errorf("%w: show id", ErrInvalid)
	}
	if err := st.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if st.Enabled {
		if err := s.ensureSeed(ctx, show); err != nil {
			return err
		}
	}
	if err := s.store.SaveSettings(ctx, show, st); err != nil {
		return err
	}
	s.Hub.Touch(show)
	return nil
}

// Tick runs one admission tick for show on this replica: the script, then signing and storing the new grants,
// then the local fan-out. pulse makes every local stream re-send its position even if nothing moved.
func (s *Service) Tick(ctx context.Context, show string, pulse bool) (snap Snapshot, err error) {
	if s.opt.Observe != nil {
		start := time.Now()
		defer func() { s.opt.Observe(snap, time.Since(start), err) }()
	}
	snap, err = s.store.Admit(ctx, show, nonce(), s.opt.Grace, s.opt.MaxScan)
	if err != nil {
		return snap, err
	}
	if len(snap.Grants) > 0 {
		for i := range snap.Grants {
			if err := s.sign(&snap.Grants[i], show); err != nil {
				return snap, err
			}
		}
		if err := s.store.SaveTokens(ctx, show, snap.Grants); err != nil {
			return snap, err
		}
	}
	if snap.Phase == PhasePending {
		if err := s.Draw(ctx, show); err != nil && !errors.Is(err, ErrDrawPending) {
			s.logFailure("draw", show, err)
		}
	}
	grants := snap.Grants
	needSeq, needGrant := s.Hub.Update(snap, pulse)
	snap.Grants = grants
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
	var unsaved []Grant
	for u, g := range gs {
		if g.Token == "" {
			if err := s.sign(&g, show); err != nil {
				return err
			}
			gs[u] = g
			unsaved = append(unsaved, g)
		}
	}
	if len(unsaved) > 0 {
		if err := s.store.SaveTokens(ctx, show, unsaved); err != nil {
			return err
		}
	}
	s.Hub.SetGrants(show, gs)
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
	seqs := map[string]int64{}
	for _, u := range users {
		e, err := s.store.Join(ctx, show, u)
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
		if err := s.store.Touch(ctx, show, dedupe(users)); err != nil && ctx.Err() == nil {
			s.logFailure("heartbeat", show, err)
		}
	}
}

// logFailure logs a background failure at most every 10 s per show and kind: with Redis down, every tick of every
// show fails five times a second, and one line says it.
func (s *Service) logFailure(kind, show string, err error) {
	key := kind + " " + show
	now := time.Now()
	s.mu.Lock()
	last, seen := s.loggedAt[key]
	if !seen || now.Sub(last) >= 10*time.Second {
		if len(s.loggedAt) > 10000 {
			s.loggedAt = map[string]time.Time{}
		}
		s.loggedAt[key] = now
	}
	s.mu.Unlock()
	if seen && now.Sub(last) < 10*time.Second {
		return
	}
	s.log.Error("waitroom: "+kind, "show", show, "err", err)
}
