package booking

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The end of a hold by confirmation, for the checkout: CheckHold and ExtendHold before asking the gateway, Confirm
// once the money is authorized, AfterSale to update Redis after a confirmation made inside a larger transaction,
// and AfterRefund when a refund puts the seats back on sale.

// CheckHold returns the user's booking if it is HELD (or PAYMENT_PENDING) and still owns every one of its seat
// locks with its own fencing token. A booking whose locks were lost or superseded is marked EXPIRED and
// ErrHoldExpired returned, so a fan is never charged for seats they no longer hold.
func (s *Holds) CheckHold(ctx context.Context, id, userID string) (Booking, error) {
	b, err := s.Booking(ctx, id, userID)
	if err != nil {
		return Booking{}, err
	}
	switch b.Status {
	case StatusHeld, StatusPaymentPending:
	case StatusExpired:
		return b, fmt.Errorf("booking %s: %w", id, ErrHoldExpired)
	default:
		return b, fmt.Errorf("booking %s is %s: %w", id, b.Status, ErrNotHeld)
	}
	owned, err := s.locks.Owned(ctx, b)
	if err != nil {
		return Booking{}, err
	}
	if !owned || !s.cfg.Now().Before(b.ExpiresAt) {
		if b.Status == StatusHeld {
			if eb, err := s.store.Expire(ctx, b.ID); err == nil {
				b = eb
				s.afterExpiry(ctx, []Booking{b})
			}
		}
		return b, fmt.Errorf("booking %s: %w", id, ErrHoldExpired)
	}
	return b, nil
}

// ExtendHold pushes a held booking's expiry to d from now, in Redis (only if it still owns all its locks) and in
// Postgres (so the reconciler does not expire it meanwhile). Used while a payment is in flight.
func (s *Holds) ExtendHold(ctx context.Context, b Booking, d time.Duration) (Booking, error) {
	ok, err := s.locks.Extend(ctx, b, d)
	if err != nil {
		return Booking{}, err
	}
	if !ok {
		return Booking{}, fmt.Errorf("booking %s: %w", b.ID, ErrHoldExpired)
	}
	until := s.cfg.Now().Add(d)
	if err := s.store.Extend(ctx, b.ID, until); err != nil {
		return Booking{}, err
	}
	b.ExpiresAt = until
	return b, nil
}

// Confirm turns a held booking into a sale: HELD -> CONFIRMED and its seats into the ledger in one transaction
// that checks the fencing token, then the seats are marked sold in Redis. A seat sold already (Redis lost the lock
// and someone else held and bought it) is ErrSeatsUnavailable: never a second sale.
func (s *Holds) Confirm(ctx context.Context, id string) (Booking, error) {
	b, err := s.store.Confirm(ctx, id)
	if err != nil {
		return Booking{}, err
	}
	s.AfterSale(ctx, b)
	return b, nil
}

// AfterSale does what follows a committed confirmation in Redis: the seats join the sold set and their locks go, the
// seat stream says BOOKED, the fan's waiting-room slot is freed and ShowInfo is refreshed. Callers that confirm
// inside their own transaction (postgres.ConfirmTx) call it after commit. Failures are logged: the ledger is
// already right, and the reconciler repairs the Redis mirror.
func (s *Holds) AfterSale(ctx context.Context, b Booking) {
	if err := s.locks.Sell(ctx, b); err != nil {
		s.log.ErrorContext(ctx, "mark seats sold", "booking", b.ID, "err", err)
	}
	s.releaseAdmission(ctx, b)
	s.catalog.markDirty(b.ShowID)
}

// AfterRefund is what follows a committed refund: the seats are on sale again.
func (s *Holds) AfterRefund(ctx context.Context, b Booking) {
	if err := s.locks.Unsell(ctx, b); err != nil {
		s.log.ErrorContext(ctx, "mark refunded seats unsold", "booking", b.ID, "err", err)
	}
	s.seats.noteReleased(b.ShowID, b.SeatIDs)
	s.catalog.markDirty(b.ShowID)
}

// IsConflict reports whether err means the seats are gone to someone else.
func IsConflict(err error) bool {
	return errors.Is(err, ErrSeatsUnavailable) || errors.Is(err, ErrStale)
}
