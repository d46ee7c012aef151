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
