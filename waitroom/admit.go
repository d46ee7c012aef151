package waitroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Tick runs one admission tick for show on this replica: the script, then signing and storing the new grants,
// then the local fan-out. pulse makes every local stream re-send its position even if nothing moved.
func (s *Service) Tick(ctx context.Context, show string, pulse bool) (snap TickResult, err error) {
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
			snap, err = TickResult{Show: show, Phase: PhaseClosed, At: time.Now()}, nil
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
	needSeq, needGrant := s.Hub.ApplyTick(local, pulse)
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

func (s *Service) sign(g *Grant, show string) error {
	raw, _, err := s.issuer.Issue(g.UserID, show, g.JTI, g.IssuedAt, g.ExpiresAt.Sub(g.IssuedAt))
	if err != nil {
		return fmt.Errorf("waitroom: sign admission: %w", err)
	}
	g.Token = raw
	return nil
}

func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
