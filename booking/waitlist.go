package booking

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotSoldOut refuses a waitlist entry for a show that still has seats on sale: the fan should book them.
var ErrNotSoldOut = errors.New("show not sold out")

// WaitlistEntry is a fan's place on a sold-out show's waitlist.
type WaitlistEntry struct {
	ShowID   string
	UserID   string
	Seats    int
	Position int // 1-based, first come first served; a fan keeps it when joining again
	JoinedAt time.Time
}

// WaitlistStore keeps waitlists; booking/postgres implements it.
type WaitlistStore interface {
	// JoinWaitlist adds the user to the show's waitlist, or, when already there, keeps the place and updates the
	// number of seats wanted.
	JoinWaitlist(ctx context.Context, showID, userID string, seats int, now time.Time) (WaitlistEntry, error)
}

// Waitlist lets fans of a sold-out show queue for seats that come back (refunds, lapsed holds), first come first
// served, so the operator knows the demand and whom to tell first.
type Waitlist struct {
	svc   *Service
	store WaitlistStore
}

// NewWaitlist returns the waitlist of svc's shows.
func NewWaitlist(svc *Service, store WaitlistStore) *Waitlist {
	return &Waitlist{svc: svc, store: store}
}

// Join puts userID on showID's waitlist for seats seats. Only a show with no seat available takes entries: held
// seats count as unavailable, since nobody else can book them now.
func (w *Waitlist) Join(ctx context.Context, showID, userID string, seats int) (WaitlistEntry, error) {
	if seats < 1 || seats > w.svc.cfg.MaxSeats {
		return WaitlistEntry{}, Unprocessable("seats must be between 1 and %d", w.svc.cfg.MaxSeats)
	}
	_, counts, err := w.svc.ShowDetail(ctx, showID)
	if err != nil {
		return WaitlistEntry{}, err
	}
	if counts.Available > 0 {
		return WaitlistEntry{}, fmt.Errorf("%w: %d seats are on sale", ErrNotSoldOut, counts.Available)
	}
	return w.store.JoinWaitlist(ctx, showID, userID, seats, w.svc.cfg.Now())
}
