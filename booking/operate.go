package booking

import (
	"context"
	"fmt"
	"time"
)

// ShowOverview is one upcoming show as the operator console lists it: the show, its live seat counts and sales
// figures.
type ShowOverview struct {
	Show Show
	Stats
	// Confirmed counts the show's confirmed bookings (for conversion: admitted fans who bought).
	Confirmed int
	// PaymentFailures counts pay attempts declined or failed at the gateway.
	PaymentFailures int
}

// Overview lists every show that has not started yet (and those that started in the last six hours), with live
// figures, in one call: the console refreshes it every second, so the seat counts come from the shows' snapshots
// (at most a second old) rather than a Redis read per seat.
func (s *Catalog) Overview(ctx context.Context) ([]ShowOverview, error) {
	figs, err := s.store.ShowFigures(MayLag(ctx), s.cfg.Now())
	if err != nil {
		return nil, err
	}
	out := make([]ShowOverview, 0, len(figs))
	for _, f := range figs {
		c, err := s.counts(ctx, f.Show.ID, time.Second)
		if err != nil {
			return nil, err
		}
		f.Counts = c
		if f.HoldsTotal, f.ConflictsTotal, err = s.locks.Counters(ctx, f.Show.ID); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// SetSaleStart moves a show's sale opening. The new time is in the ledger, in this replica's cache and in the
// show's ShowInfo (where the waiting room reads it, so its pre-sale draw runs at the new time) before it returns;
// other replicas drop their cached copy on the show-changed event (see ShowChanged). It returns the show before
// and after.
func (s *Catalog) SetSaleStart(ctx context.Context, showID string, at time.Time) (old, now Show, err error) {
	if old, err = s.operatorShow(ctx, showID); err != nil {
		return Show{}, Show{}, err
	}
	switch {
	case at.IsZero():
		return Show{}, Show{}, Unprocessable("saleStartsAt is required")
	case at.Year() < 2000:
		return Show{}, Show{}, Unprocessable("saleStartsAt is out of range")
	case at.After(old.StartsAt):
		return Show{}, Show{}, Unprocessable("saleStartsAt must not be after the show starts (%s)",
			old.StartsAt.Format(time.RFC3339))
	}
	if now, err = s.store.SetSaleStart(ctx, showID, at.UTC()); err != nil {
		return Show{}, Show{}, err
	}
	return old, now, s.showChanged(ctx, now)
}

// CloseSale ends a show's sale: from now on every replica refuses new holds (ErrSaleClosed) and the waiting room
// answers joins "closed". Bookings already held may still be paid. Closing a closed sale changes nothing.
func (s *Catalog) CloseSale(ctx context.Context, showID string) (old, now Show, err error) {
	if old, err = s.operatorShow(ctx, showID); err != nil {
		return Show{}, Show{}, err
	}
	if !old.SaleClosedAt.IsZero() {
		return old, old, nil
	}
	if now, err = s.store.CloseSale(ctx, showID, s.cfg.Now().UTC()); err != nil {
		return Show{}, Show{}, err
	}
	return old, now, s.showChanged(ctx, now)
}

// operatorShow reads a show from the ledger itself, not the cache, since the operator is about to change it.
func (s *Catalog) operatorShow(ctx context.Context, showID string) (Show, error) {
	if !ValidID(showID) {
		return Show{}, fmt.Errorf("show %q: %w", clip(showID), ErrNotFound)
	}
	return s.store.Show(ctx, showID)
}

// showChanged makes a changed show definition visible: this replica's cache, ShowInfo, and the other replicas
// (through CatalogBoard.AnnounceShow, whose subscribers call ShowChanged).
func (s *Catalog) showChanged(ctx context.Context, sh Show) error {
	s.cache.store(&s.cache.shows, sh.ID, &sh)
	if err := s.PublishInfo(ctx, sh.ID); err != nil {
		return err
	}
	return s.locks.AnnounceShow(ctx, sh.ID)
}

// ShowChanged drops the cached definition of a show an operator changed on another replica, so the next read
// comes from the ledger.
func (s *Catalog) ShowChanged(showID string) {
	s.cache.forget(showID)
}

// AdminBooking returns any user's booking, for the operator.
func (s *Holds) AdminBooking(ctx context.Context, id string) (Booking, error) {
	if !ValidID(id) {
		return Booking{}, fmt.Errorf("booking %q: %w", clip(id), ErrNotFound)
	}
	return s.store.Booking(ctx, id)
}

// UserBookings returns a user's most recent bookings (at most 100), newest first, for the operator.
func (s *Holds) UserBookings(ctx context.Context, userID string) ([]Booking, error) {
	if !ValidID(userID) {
		return nil, Invalid("userId is not a valid id")
	}
	return s.store.UserBookings(MayLag(ctx), userID, 100)
}

// OnSale reports whether the show's sale is open at now: opened, not closed by an operator, show not started.
func (sh Show) OnSale(now time.Time) bool {
	return !now.Before(sh.SaleStartsAt) && sh.SaleClosedAt.IsZero() && now.Before(sh.StartsAt)
}
