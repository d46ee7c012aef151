package waitroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// The admission tick, one pipeline. Every tick of every show on this replica runs these stages, in this order,
// each a function below in the same order:
//
//	admit    the store takes the fans whose turn it is off the line and grants each a slot, atomically
//	         (waitroom/redis admit.lua); a store that lost the show is restored from the record first
//	         (durable.go) and asked again
//	issue    the grants, with any the store says are overdue, are recorded in PostgreSQL, then signed, then
//	         their tokens stored beside them: the only way a token comes into being, so every token a fan holds
//	         is for an admission on record (durable.go says why that order)
//	cursor   the durable cursor (below every admission not yet recorded) is recorded, at most every cursorEvery
//	draw     a sale that opened with its pre-opening draw unwritten gets it written
//	deliver  this replica's streams are told the tick: positions, and the grants of the fans it streams; fans it
//	         streams that the store forgot or skipped while live are put back
//
// Recovery (restore, reserve) is not a stage: it is durable.go's, and admit and deliver call it only when the
// store asks. A stage's failure is the tick's error, except issue's: its grants stay unrecorded in the store, and
// the first tick after overdueAfter (on any replica) hands them out again.

// Tick runs one admission tick for show on this replica. pulse makes every local stream re-send its position
// even if nothing moved.
func (s *Service) Tick(ctx context.Context, show string, pulse bool) (snap TickResult, err error) {
	if s.opt.Observe != nil {
		start := time.Now()
		defer func() { s.opt.Observe(snap, time.Since(start), err) }()
	}
	if snap, err = s.admit(ctx, show); err != nil {
		return snap, err
	}
	delivered, err := s.issueTick(ctx, &snap)
	if err != nil {
		s.logFailure("record admissions", show, err)
	} else {
		s.recordCursor(ctx, show, snap)
	}
	s.drawIfPending(ctx, snap)
	return snap, s.deliver(ctx, snap, delivered, pulse)
}

// admit is the tick's first stage: the store's pop-and-grant. Nobody is admitted while this replica cannot
// record admissions: their tokens could not be handed out, and the tokens' time would run while the fans wait
// for them. Until a lost show is back nothing is sent to its streams, so fans keep their places on screen and
// are never told "closed".
func (s *Service) admit(ctx context.Context, show string) (TickResult, error) {
	maxScan := s.opt.MaxScan
	if s.recordFailing(show) {
		maxScan = 0
	}
	return recovering(ctx, s, show,
		func() (TickResult, error) { return s.store.Admit(ctx, show, nonce(), s.opt.Grace, maxScan) },
		func() (TickResult, error) { return TickResult{Show: show, Phase: PhaseClosed, At: time.Now()}, nil })
}

// recordTimeout bounds one recording of admissions: a PostgreSQL that hangs holds up a tick (and the shows this
// replica ticks after it) for at most this long.
const recordTimeout = 2 * time.Second

// recordPause is how long a replica admits nobody after recording admissions failed (see admit), so that while
// PostgreSQL is down fans stay in line instead of being admitted to tokens nobody can hand them.
const recordPause = 2 * time.Second

// issueTick is the issue stage: a tick's grants and the overdue ones it carries, issued in one batch, returned
// signed for delivery (none on error). snap's Grants and Overdue are signed in place, and its DurableCursor
// moves past them once they are recorded.
func (s *Service) issueTick(ctx context.Context, snap *TickResult) ([]Grant, error) {
	n := len(snap.Grants)
	if n+len(snap.Overdue) == 0 {
		return nil, nil
	}
	gs := make([]Grant, 0, n+len(snap.Overdue))
	gs = append(append(gs, snap.Grants...), snap.Overdue...)
	durable, err := s.issue(ctx, snap.Show, gs)
	if err != nil {
		return nil, err
	}
	snap.Grants, snap.Overdue = gs[:n:n], gs[n:]
	snap.DurableCursor = max(snap.DurableCursor, durable)
	return gs, nil
}

// issue makes grants deliverable: recorded in PostgreSQL first, then signed (in place), then their tokens stored
// beside them in the store, which marks them recorded. The tick, a fan's status finding a grant its admitter
// did not record (join.go's place) and deliver's resolve all issue through it. It returns the show's durable
// cursor with them recorded. A failure wraps ErrUnavailable; the grants stay unrecorded and are retried.
func (s *Service) issue(ctx context.Context, show string, gs []Grant) (int64, error) {
	if len(gs) == 0 {
		return 0, nil
	}
	batch := make([]admission.Grant, len(gs))
	for i, g := range gs {
		batch[i] = admission.Grant{ShowID: show, JTI: g.JTI, UserID: g.UserID, IssuedAt: g.IssuedAt,
			ExpiresAt: g.ExpiresAt}
	}
	rctx, cancel := context.WithTimeout(ctx, recordTimeout)
	err := s.queues.AddGrants(rctx, batch)
	cancel()
	s.mu.Lock()
	if err != nil {
		s.failedAt.Add(show, time.Now())
	} else {
		s.failedAt.Remove(show)
	}
	s.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("%w: record admissions: %w", ErrUnavailable, err)
	}
	for i := range gs {
		if err := s.sign(&gs[i], show); err != nil {
			return 0, err
		}
	}
	return s.store.SaveTokens(ctx, show, gs)
}

// sign signs a recorded grant's token in place. Ed25519 is deterministic and the claims are the grant's, so any
// replica signing the same grant makes the same token.
func (s *Service) sign(g *Grant, show string) error {
	raw, _, err := s.issuer.Issue(g.UserID, show, g.JTI, g.IssuedAt, g.ExpiresAt.Sub(g.IssuedAt))
	if err != nil {
		return fmt.Errorf("waitroom: sign admission: %w", err)
	}
	g.Token = raw
	return nil
}

// recordFailing reports whether recording show's admissions failed here within recordPause.
func (s *Service) recordFailing(show string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.failedAt.Get(show)
	return ok && time.Since(at) < recordPause
}

// recordCursor is the cursor stage: it records a show's durable cursor (below every unrecorded admission) when
// it moved, at most every cursorEvery per replica; a partitioned queue's, each line's.
func (s *Service) recordCursor(ctx context.Context, show string, snap TickResult) {
	if snap.Phase == PhaseClosed {
		return
	}
	if snap.Lines == nil {
		s.recordLineCursor(ctx, show, snap.DurableCursor)
		return
	}
	for _, l := range snap.Lines {
		s.recordLineCursor(ctx, l.ID, l.Durable)
	}
}

// recordLineCursor records one line's durable cursor (a single queue's is its show's) when due.
func (s *Service) recordLineCursor(ctx context.Context, line string, cursor int64) {
	if cursor <= 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	last, _ := s.cursors.Get(line)
	due := cursor > last.cursor && now.Sub(last.at) >= cursorEvery
	if due {
		s.cursors.Add(line, savedCursor{cursor: cursor, at: now})
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.record.SaveCursor(ctx, line, cursor); err != nil {
		s.logFailure("record cursor", line, err)
		s.mu.Lock()
		s.cursors.Add(line, last) // try again next tick
		s.mu.Unlock()
	}
}

// drawIfPending is the draw stage: a sale that opened before its draw was written (draw.go).
func (s *Service) drawIfPending(ctx context.Context, snap TickResult) {
	if snap.Phase != PhasePending {
		return
	}
	if err := s.Draw(ctx, snap.Show); err != nil && !errors.Is(err, ErrDrawPending) {
		s.logFailure("draw", snap.Show, err)
	}
}

// deliver is the last stage: the tick as this replica's streams see it, with the grants this replica issued.
// Streams whose fan the hub has no ticket or grant for are resolved from the store.
func (s *Service) deliver(ctx context.Context, snap TickResult, delivered []Grant, pulse bool) error {
	local := snap
	local.Grants = delivered
	needSeq, needGrant := s.Hub.ApplyTick(local, pulse)
	if len(needSeq) > 0 {
		if err := s.resolveSeqs(ctx, snap.Show, needSeq); err != nil {
			return err
		}
	}
	if len(needGrant) > 0 {
		return s.resolveGrants(ctx, snap.Show, needGrant)
	}
	return nil
}

// resolveSeqs finds the tickets of local fans the hub has none for. Streaming fans with no ticket (they arrived
// while the show was sold out, or were skipped in a race with their heartbeat) are live and want in: they join
// now, once.
func (s *Service) resolveSeqs(ctx context.Context, show string, users []string) error {
	seqs, err := s.store.Seqs(ctx, show, users)
	if err != nil {
		return err
	}
	s.Hub.SetSeq(show, seqs)
	return s.rejoin(ctx, show, absent(users, seqs))
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
	return s.rejoin(ctx, show, absent(users, gs))
}

// absent lists the users the store found nothing for.
func absent[V any](users []string, found map[string]V) []string {
	var missing []string
	for _, u := range users {
		if _, ok := found[u]; !ok {
			missing = append(missing, u)
		}
	}
	return missing
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
// not given back), and hands their watchers the result. The heartbeat flush uses it for streams whose fans the
// store lost (run.go).
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
