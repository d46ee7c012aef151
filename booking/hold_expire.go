package booking

import "context"

// afterExpiry cleans up after bookings were marked EXPIRED: any locks they still own go (normally Redis dropped
// them already), their waiting-room slots are freed and ShowInfo is refreshed.
func (s *Holds) afterExpiry(ctx context.Context, bs []Booking) {
	if len(bs) == 0 {
		return
	}
	for _, b := range bs {
		freed, err := s.locks.Release(ctx, b)
		if err != nil {
			s.log.WarnContext(ctx, "release expired locks", "booking", b.ID, "err", err)
		}
		s.seats.noteReleased(b.ShowID, freed)
		s.announceFree(ctx, b)
		s.releaseAdmission(ctx, b)
		s.catalog.markDirty(b.ShowID)
	}
	if s.cfg.OnExpired != nil {
		s.cfg.OnExpired(len(bs))
	}
	s.log.InfoContext(ctx, "holds expired", "count", len(bs))
}

// announceFree publishes as AVAILABLE the seats of an expired booking that nobody holds or bought now. Redis
// reports a lock's expiry only when it notices it (on access, or when its expiry cycle samples the key), which
// on a busy Redis can lag; without this the seat maps would show those seats held until that moment.
func (s *Holds) announceFree(ctx context.Context, b Booking) {
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
	s.seats.noteReleased(b.ShowID, free)
	if err := s.locks.PublishSeats(ctx, b.ShowID, evs); err != nil {
		s.log.WarnContext(ctx, "publish expired seats", "booking", b.ID, "err", err)
	}
}
