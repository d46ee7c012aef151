package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
	return s.enter(ctx, show, user, receipt, trusted())
}

// enter is a join that takes a new place only as ask allows.
func (s *Service) enter(ctx context.Context, show, user, receipt string, ask Ask) (Place, error) {
	presented := s.verifyReceipt(show, user, receipt)
	for attempt := 0; ; attempt++ {
		e, err := s.joinAsk(ctx, show, user, presented.seq, ask)
		if err != nil {
			return Place{}, err
		}
		if e.Refused != "" {
			return Place{}, refusal(e.Refused)
		}
		if e.Passed && ask.Returning == "" { // asked once: Returning is set below
			// The fan's ticket is one the cursor had passed before Redis lost the queue: only the admission
			// record can tell a fan served then from one skipped while away.
			served, err := s.queues.Record().Admitted(ctx, show, user)
			if err != nil {
				return Place{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			ask.Returning = ReturningBack
			if served {
				ask.Returning = ReturningServed
			}
			continue
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
			s.journalJoin(show, user, p)
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

// join runs the store's join for a fan already live (no guard), restoring what the store lost and reserving
// tickets as it asks.
func (s *Service) join(ctx context.Context, show, user string, receipted int64) (Entry, error) {
	return s.joinAsk(ctx, show, user, receipted, trusted())
}

// joinAsk is join under ask.
func (s *Service) joinAsk(ctx context.Context, show, user string, receipted int64, ask Ask) (Entry, error) {
	return s.restoring(ctx, show, func() (Entry, error) { return s.store.Enter(ctx, show, user, receipted, ask) })
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
// data, or skipped them while their phone slept) whose receipt is valid gets the receipted place back rather than
// being told to join again. It is the trusted form of StatusEnter, for the waiting room's own callers.
func (s *Service) StatusWithReceipt(ctx context.Context, show, user, receipt string) (Place, error) {
	return s.StatusEnter(ctx, JoinRequest{Show: show, User: user, Receipt: receipt}, false)
}

// StatusEnter is a fan's status poll presenting the place receipt in r: as StatusWithReceipt, and when the
// receipt's place cannot be given back, a new place is taken only through the guard (guarded true).
func (s *Service) StatusEnter(ctx context.Context, r JoinRequest, guarded bool) (Place, error) {
	if guarded && s.trickle.knownDown(r.Show) {
		return s.whenStoreDown(ctx, r, errKnownDown)
	}
	p, err := s.Status(ctx, r.Show, r.User)
	switch {
	case errors.Is(err, ErrNotInQueue) && s.verifyReceipt(r.Show, r.User, r.Receipt).ok:
		if guarded {
			return s.Enter(ctx, r)
		}
		return s.JoinWithReceipt(ctx, r.Show, r.User, r.Receipt)
	case err != nil && guarded:
		return s.whenStoreDown(ctx, r, err) // a poll is a fan asking to be let in, as a join is
	}
	return p, err
}

// Watch joins (idempotently, presenting receipt) and subscribes a local stream, for the waiting room's own
// callers; fans' streams go through WatchEnter. The caller must Unwatch.
func (s *Service) Watch(ctx context.Context, show, user, receipt string) (*Watcher, Place, error) {
	p, err := s.JoinWithReceipt(ctx, show, user, receipt)
	if err != nil {
		return nil, Place{}, err
	}
	w, err := s.Hub.Add(show, user, p, s.opt.MaxStreams)
	return w, p, err
}

// WatchEnter is Watch through the guard: a fan without a place who brings no proof is refused like a join.
func (s *Service) WatchEnter(ctx context.Context, r JoinRequest) (*Watcher, Place, error) {
	show, user := r.Show, r.User
	p, err := s.Enter(ctx, r)
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
	p := Place{Status: e.Status, Seq: e.Seq, OpensAt: e.OpensAt, Paused: e.Paused, Shadow: e.Shadow}
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
		p.Position = TickResult{Cursor: e.Cursor, Gap: e.Gap}.Position(e.Seq)
		if e.Lines != nil {
			p.Position = e.Lines.PositionAt(e.Seq, e.At)
		}
		if e.Paused {
			break // no ETA while nobody is admitted
		}
		r, ok, conf := s.Hub.Rate(show)
		if conf == 0 {
			conf = e.AdmitPerSecond
		}
		f := e.Lines.Share(e.Seq) // a lane is served at its part of the show's rate
		p.ETA = ETA(p.Position, r*f, ok, conf*f)
	case e.Status == Waiting && !e.OpensAt.IsZero():
		if d := time.Until(e.OpensAt); d > 0 {
			p.ETA = d
		}
	}
	return p, nil
}
