package booking

import (
	"context"
	"log/slog"
	"time"
)

// ReconcileStore is the ledger as the Reconciler needs it.
type ReconcileStore interface {
	// ExpireDue marks HELD bookings past their expiry EXPIRED (of one show, or all when showID is empty) and
	// returns them. Safe to run on several replicas at once: each booking is expired by exactly one.
	ExpireDue(ctx context.Context, showID string, now time.Time, limit int) ([]Booking, error)
	UpcomingShows(ctx context.Context, now time.Time) ([]string, error)
	SoldSeats(ctx context.Context, showID string) ([]string, error)
	// LockOwners reads the bookings of ids that exist, with only what a release of their locks needs: ID, UserID,
	// ShowID, Status and SeatIDs. An id the ledger does not know is left out.
	LockOwners(ctx context.Context, ids []string) ([]Booking, error)
}

// ReconcileMirror is Redis as the Reconciler needs it: the sold set it restores, the seat events it publishes
// and the seat locks it sweeps for orphans.
type ReconcileMirror interface {
	// AddSold mirrors the ledger's sold seats into Redis (after Redis lost them).
	AddSold(ctx context.Context, showID string, seatIDs []string) error
	// Sold reads the show's sold seats as Redis has them, the set every claim is checked against.
	Sold(ctx context.Context, showID string) ([]string, error)
	// PublishSeats announces seat changes on the show's seat channel.
	PublishSeats(ctx context.Context, showID string, evs []SeatEvent) error
	// SeatLocks reads the locks of the given seats of a show, each with the time it has left; a seat without a
	// lock is left out.
	SeatLocks(ctx context.Context, showID string, seatIDs []string) ([]SeatLock, error)
	// Release deletes the locks b still owns (compare-and-delete on "bookingID|fence") and publishes the seats it
	// freed as AVAILABLE. It returns the seats freed.
	Release(ctx context.Context, b Booking) ([]string, error)
}

// Reconciler is the booking's background work on each replica: it expires lapsed holds, mirrors the ledger's
// sold seats into Redis, releases seat locks no live booking holds (reconcile_orphans.go), follows the other
// replicas' seat events into the seat cache, and has the catalog rewrite ShowInfo where availability changed.
type Reconciler struct {
	catalog *Catalog
	holds   *Holds
	seats   *seatCache
	store   ReconcileStore
	locks   ReconcileMirror
	cfg     Config
	log     *slog.Logger
	nudge   chan string // shows with a seat lock that just expired
}

// Run does the background work until ctx ends: it expires lapsed holds (at once when a seat lock's
// expiry is reported through SeatExpired, and at every ReconcileEvery in any case), rewrites the ShowInfo of shows
// whose availability changed, and at each reconcile releases every upcoming show's orphaned seat locks,
// republishes its ShowInfo and mirrors its sold seats into Redis, so that both come back after Redis lost its data.
func (s *Reconciler) Run(ctx context.Context) {
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
			s.catalog.flushInfo(ctx)

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
func (s *Reconciler) SeatExpired(ctx context.Context, showID, seatID string) {
	s.seats.noteFreed(showID, []string{seatID})
	if err := s.locks.PublishSeats(ctx, showID, []SeatEvent{{SeatID: seatID, Status: SeatAvailable}}); err != nil {
		s.log.WarnContext(ctx, "publish expired seat", "show", showID, "err", err)
	}
	s.catalog.markDirty(showID)
	select {
	case s.nudge <- showID:
	default: // the periodic sweep catches up
	}
}

// expireAt has showID's lapsed holds expired at at, as SeatExpired has them expired when a lock's expiry is
// reported: for a hold that ends with its admission, whose locks outlive it (hold.go), no report comes, and the
// seats would otherwise wait for the next sweep, up to ReconcileEvery later. A timer per such hold, dropped on the
// floor if the Reconciler is not running (the sweep still finds the hold).
func (s *Reconciler) expireAt(showID string, at time.Time) {
	time.AfterFunc(time.Until(at), func() {
		select {
		case s.nudge <- showID:
		default: // the periodic sweep catches up
		}
	})
}

// SeatChanged is told of a seat event published by any replica (booking/redis.WatchSeatEvents), so this
// process's snapshot of the show follows the others' claims and releases within milliseconds instead of at its
// next reload. Events about seats this process changed itself a moment ago are not trusted over what it knows
// (seatCache.heard). An event that arrives out of order can only make the snapshot wrong until the next reload,
// which costs a needless trip to the hold script or an early refusal, never a wrong grant.
func (s *Reconciler) SeatChanged(showID string, ev SeatEvent) {
	s.seats.heard(showID, ev.SeatID, ev.Status != SeatAvailable)
}

// Reconcile expires every lapsed hold, releases the seat locks no live booking holds and republishes every
// upcoming show's availability.
func (s *Reconciler) Reconcile(ctx context.Context) {
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
		if err := s.sweepShow(ctx, id); err != nil {
			s.log.ErrorContext(ctx, "reconcile: show info", "show", id, "err", err)
		}
	}
}

// sweepShow releases the show's orphaned seat locks (releaseOrphans) and republishes its ShowInfo, both from one
// read of the show's locks: the locks the sweep leaves are the seats held. A claim, cancel or sale since that
// read marks the show dirty, so the next flush of ShowInfo counts it.
func (s *Reconciler) sweepShow(ctx context.Context, showID string) error {
	show, err := s.catalog.Show(ctx, showID)
	if err != nil {
		return err
	}
	layout, index, err := s.catalog.layoutIndex(ctx, showID)
	if err != nil {
		return err
	}
	seatIDs := make([]string, len(layout))
	for i, st := range layout {
		seatIDs[i] = st.ID
	}
	locks, err := s.locks.SeatLocks(ctx, showID, seatIDs)
	if err != nil {
		return err
	}
	freed, err := s.releaseOrphans(ctx, showID, locks)
	if err != nil {
		// The locks stand as read; ShowInfo is still worth rewriting.
		s.log.ErrorContext(ctx, "reconcile: orphaned seat locks", "show", showID, "err", err)
	}
	soldIDs, err := s.locks.Sold(ctx, showID)
	if err != nil {
		return err
	}
	held := make(map[string]bool, len(locks))
	for _, l := range locks {
		held[l.SeatID] = true
	}
	for _, id := range freed {
		delete(held, id)
	}
	sold := make(map[string]bool, len(soldIDs))
	for _, id := range soldIDs {
		sold[id] = true
	}
	return s.catalog.publishCounts(ctx, show, newSnapshot(time.Now(), layout, index, held, sold).counts())
}

func (s *Reconciler) expireDue(ctx context.Context, showID string) {
	for ctx.Err() == nil {
		bs, err := s.store.ExpireDue(ctx, showID, s.cfg.Now(), 500)
		if err != nil {
			s.log.ErrorContext(ctx, "expire holds", "err", err)
			return
		}
		s.holds.afterExpiry(ctx, bs)
		if len(bs) < 500 {
			return
		}
	}
}
