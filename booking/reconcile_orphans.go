package booking

import (
	"context"
	"time"
)

// Orphaned seat locks. A lock keeps its seat off sale for its whole TTL, so one that no live booking holds is a
// seat in limbo: nobody can pay for it and nobody else can hold it. Two failures leave one behind, both seen under
// load: the hold script ran in Redis but its reply timed out, so the hold failed and no booking row was written;
// or a cancel committed in Postgres and the release that follows it failed. Each sweep of the Reconciler finds
// them and releases them with the same fenced release every other path uses.

// SeatLock is one seat's lock as Redis holds it.
type SeatLock struct {
	SeatID    string
	BookingID string
	Fence     int64
	// TTL is the time the lock has left; negative when it has none (no claim makes such a lock).
	TTL time.Duration
}

// orphanGrace is how old a lock of a booking Postgres does not know must be before it is taken for an orphan. A
// hold writes its row within claimWindow of sending its claim (hold.go); the margin covers an insert that
// commits while its cancelled request is still being torn down.
func (s *Holds) orphanGrace() time.Duration { return s.window + 10*time.Second }

// holdsSeats reports whether a booking in status st may own seat locks. Only the end states that give the seats
// back are listed: a status added later keeps its locks until someone decides otherwise.
func holdsSeats(st Status) bool {
	switch st {
	case StatusCancelled, StatusExpired, StatusRefunded:
		return false
	}
	return true // HELD, PAYMENT_PENDING, and CONFIRMED (its locks go when the sale is mirrored)
}

// releaseOrphans releases those of the show's seat locks, as sweepShow read them, that no live booking holds:
//   - the lock of a booking that is CANCELLED, EXPIRED or REFUNDED in the ledger, at once: none of these states
//     ever holds seats again;
//   - the lock of a booking the ledger does not know, once the lock is older than orphanGrace, so that a hold
//     whose insert is still under way keeps its seats. Its age is read from the time it has left, measured
//     against the shortest TTL a claim is made with: a lower bound whatever TTL the claim had, taken on Redis's
//     clock alone.
//
// Each release is release.lua's compare-and-delete on the lock's "bookingID|fence", so a lock that lapsed and
// was claimed by another booking between this read and the release is left alone. The freed seats are published
// as AVAILABLE (by the release itself) and noted in the seat cache; the caller, sweepShow, republishes the
// show's ShowInfo right after with the locks it read less the seats freed, which it returns.
func (s *Reconciler) releaseOrphans(ctx context.Context, showID string, locks []SeatLock) ([]string, error) {
	if len(locks) == 0 {
		return nil, nil
	}
	// One claim's locks share a value and an expiry: group them by value.
	type owner struct {
		booking string
		fence   int64
	}
	type claimed struct {
		seats []string
		ttl   time.Duration // the longest left, so the claim's age is never overstated
	}
	claims := map[owner]*claimed{}
	var ids []string
	for _, l := range locks {
		o := owner{l.BookingID, l.Fence}
		c := claims[o]
		if c == nil {
			c = &claimed{ttl: l.TTL}
			claims[o] = c
			ids = append(ids, l.BookingID)
		}
		c.seats = append(c.seats, l.SeatID)
		c.ttl = max(c.ttl, l.TTL)
	}
	bs, err := s.store.LockOwners(ctx, ids)
	if err != nil {
		return nil, err
	}
	known := make(map[string]Booking, len(bs))
	for _, b := range bs {
		known[b.ID] = b
	}
	shortest, grace := s.holds.shortestTTL(), s.holds.orphanGrace()
	var freed []string
	for o, c := range claims {
		b, ok := known[o.booking]
		state := string(b.Status)
		switch {
		case ok && !holdsSeats(b.Status):
			// Released with the booking's own seats and user, so its entry under the user's seat cap goes too.
			b.Fence = o.fence
		case !ok && (c.ttl < 0 || shortest-c.ttl >= grace):
			// Nobody knows the user: its cap entry lapses with the claim's TTL.
			b = Booking{ID: o.booking, ShowID: showID, SeatIDs: c.seats, Fence: o.fence}
			state = "unknown to the ledger"
		default:
			continue
		}
		f, err := s.locks.Release(ctx, b)
		if err != nil {
			s.log.WarnContext(ctx, "release orphaned seat locks", "show", showID, "booking", b.ID, "err", err)
			continue
		}
		if len(f) > 0 {
			s.log.InfoContext(ctx, "released orphaned seat locks", "show", showID, "booking", b.ID,
				"status", state, "seats", f)
			freed = append(freed, f...)
		}
	}
	if len(freed) > 0 {
		s.seats.noteReleased(showID, freed)
	}
	return freed, nil
}
