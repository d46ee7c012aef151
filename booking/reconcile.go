package booking

import (
	"context"
	"time"
)

// Run does the Service's background work until ctx ends: it expires lapsed holds (at once when a seat lock's
// expiry is reported through SeatExpired, and at every ReconcileEvery in any case), rewrites the ShowInfo of shows
// whose availability changed, and at each reconcile republishes every upcoming show's ShowInfo and mirrors its
// sold seats into Redis, so that both come back after Redis lost its data.
func (s *Service) Run(ctx context.Context) {
	sweep := time.NewTicker(s.cfg.ReconcileEvery)
	defer sweep.Stop()
	flush := time.NewTicker(s.cfg.InfoCoalesce)
	defer flush.Stop()

	s.Reconcile(ctx)
	pending := map[string]time.Time{}
	var soon <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			s.Reconcile(ctx)
		case <-flush.C:
			s.flushInfo(ctx)

		case show := <-s.nudge:
			// A lock expires in Redis's clock a moment before the booking's expires_at passes in Postgres's;
			// look a little later so the sweep finds it due.
			if _, ok := pending[show]; !ok {
				pending[show] = time.Now().Add(300 * time.Millisecond)
			}
			if soon == nil {
				soon = time.After(300 * time.Millisecond)
			}
		case <-soon:
			soon = nil
			now := time.Now()
			for show, at := range pending {
				if now.Before(at) {
					if soon == nil {
						soon = time.After(at.Sub(now))
					}
					continue
				}
				delete(pending, show)
				s.expireDue(ctx, show)
			}
		}
	}
}

// SeatExpired is told that a seat lock expired in Redis (keyspace notification). The seat is free again right
// now; its booking is marked EXPIRED shortly after.
func (s *Service) SeatExpired(ctx context.Context, showID, seatID string) {
	s.noteFreed(showID, []string{seatID})
	if err := s.locks.PublishSeats(ctx, showID, []SeatEvent{{SeatID: seatID, Status: SeatAvailable}}); err != nil {
		s.log.WarnContext(ctx, "publish expired seat", "show", showID, "err", err)
	}
	s.markDirty(showID)
	select {
	case s.nudge <- showID:
	default: // the periodic sweep catches up
	}
}

// SeatChanged is told of a seat event published by any replica (booking/redis.WatchSeatEvents), so this
// process's snapshot of the show follows the others' claims and releases within milliseconds instead of at its
// next reload. An event that arrives out of order can only make the snapshot wrong until the next reload, which
// costs a needless trip to the hold script or an early refusal, never a wrong grant.
func (s *Service) SeatChanged(showID string, ev SeatEvent) {
	if ev.Status == SeatAvailable {
		s.noteFreed(showID, []string{ev.SeatID})
		return
	}
	s.noteHeld(showID, []string{ev.SeatID})
}

// Reconcile expires every lapsed hold and republishes every upcoming show's availability.
func (s *Service) Reconcile(ctx context.Context) {
	s.expireDue(ctx, "")
	shows, err := s.store.UpcomingShows(ctx, s.cfg.Now())
	if err != nil {
		s.log.ErrorContext(ctx, "reconcile: list shows", "err", err)
		return
	}
	for _, id := range shows {
		if ctx.Err() != nil {
			return
		}
		sold, err := s.store.SoldSeats(ctx, id)
		if err == nil && len(sold) > 0 {
			err = s.locks.AddSold(ctx, id, sold)
		}
		if err != nil {
			s.log.ErrorContext(ctx, "reconcile: sold seats", "show", id, "err", err)
		}
		if err := s.PublishInfo(ctx, id); err != nil {
			s.log.ErrorContext(ctx, "reconcile: show info", "show", id, "err", err)
		}
	}
}

func (s *Service) expireDue(ctx context.Context, showID string) {
	for ctx.Err() == nil {
		bs, err := s.store.ExpireDue(ctx, showID, s.cfg.Now(), 500)
		if err != nil {
			s.log.ErrorContext(ctx, "expire holds", "err", err)
			return
		}
		s.afterExpiry(ctx, bs)
		if len(bs) < 500 {
			return
		}
	}
}

// afterExpiry cleans up after bookings were marked EXPIRED: any locks they still own go (normally Redis dropped
// them already), their waiting-room slots are freed and ShowInfo is refreshed.
func (s *Service) afterExpiry(ctx context.Context, bs []Booking) {
	if len(bs) == 0 {
		return
	}
	for _, b := range bs {
		freed, err := s.locks.Release(ctx, b)
		if err != nil {
			s.log.WarnContext(ctx, "release expired locks", "booking", b.ID, "err", err)
		}
		s.noteFreed(b.ShowID, freed)
		s.announceFree(ctx, b)
		s.releaseAdmission(ctx, b)
		s.markDirty(b.ShowID)
	}
	if s.cfg.OnExpired != nil {
		s.cfg.OnExpired(len(bs))
	}
	s.log.InfoContext(ctx, "holds expired", "count", len(bs))
}

func (s *Service) flushInfo(ctx context.Context) {
	conflicts := s.takeConflicts()
	s.mu.Lock()
	shows := make([]string, 0, len(s.dirty))
	for id := range s.dirty {
		shows = append(shows, id)
	}
	s.dirty = map[string]bool{}
	s.mu.Unlock()
	for id, n := range conflicts {
		if err := s.locks.AddConflicts(ctx, id, n); err != nil {
			s.log.WarnContext(ctx, "count conflicts", "show", id, "err", err)
		}
	}
	for _, id := range shows {
		if err := s.PublishInfo(ctx, id); err != nil {
			s.log.WarnContext(ctx, "publish show info", "show", id, "err", err)
		}
	}
}

// PublishInfo computes the show's live counts and writes them to ShowInfo.
func (s *Service) PublishInfo(ctx context.Context, showID string) error {
	show, err := s.Show(ctx, showID)
	if err != nil {
		return err
	}
	c, err := s.Counts(ctx, showID)
	if err != nil {
		return err
	}
	// The hash is rewritten every time (it may have been lost); the waiting room is told only of a change.
	s.mu.Lock()
	if s.published == nil {
		s.published = map[string]Counts{}
	}
	last, seen := s.published[showID]
	s.published[showID] = c
	s.mu.Unlock()
	return s.locks.PublishInfo(ctx, show, c, s.cfg.Now(), !seen || last != c)
}

// announceFree publishes as AVAILABLE the seats of an expired booking that nobody holds or bought now. Redis
// reports a lock's expiry only when it notices it (on access, or when its expiry cycle samples the key), which
// on a busy Redis can lag; without this the seat maps would show those seats held until that moment.
func (s *Service) announceFree(ctx context.Context, b Booking) {
	held, sold, err := s.locks.Status(ctx, b.ShowID, b.SeatIDs)
	if err != nil {
		s.log.WarnContext(ctx, "status of expired seats", "booking", b.ID, "err", err)
		return
	}
	var evs []SeatEvent
	var free []string
	for _, id := range b.SeatIDs {
		if !held[id] && !sold[id] {
			evs = append(evs, SeatEvent{SeatID: id, Status: SeatAvailable})
			free = append(free, id)
		}
	}
	if len(evs) == 0 {
		return
	}
	s.noteFreed(b.ShowID, free)
	if err := s.locks.PublishSeats(ctx, b.ShowID, evs); err != nil {
		s.log.WarnContext(ctx, "publish expired seats", "booking", b.ID, "err", err)
	}
}
