package booking

import (
	"context"
	"errors"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// The waiting room's part in a hold: the admission a hold is made under, and its end with the last booking made
// under it.

// Admit runs the waiting-room check for a request on a show (also used by pay).
func (s *Holds) Admit(ctx context.Context, showID, userID, raw string) (jti string, exp time.Time, err error) {
	c, err := s.admit(ctx, showID, userID, raw)
	if err != nil || c == nil {
		return "", time.Time{}, err
	}
	return c.jti, c.exp, nil
}

type admitted struct {
	jti string
	exp time.Time
}

func (s *Holds) admit(ctx context.Context, showID, userID, raw string) (*admitted, error) {
	if s.gate == nil {
		return nil, nil
	}
	c, err := s.gate.Check(ctx, showID, userID, raw)
	switch {
	case errors.Is(err, admission.ErrRequired):
		return nil, &QueueError{ShowID: showID, Cause: err}
	case err != nil:
		return nil, err
	case c == nil:
		return nil, nil
	}
	a := &admitted{jti: c.ID}
	if c.ExpiresAt != nil {
		a.exp = c.ExpiresAt.Time
	}
	return a, nil
}

// releaseAdmission ends the waiting-room admission b was made under, unless another of the fan's bookings made
// under it is still HELD or PAYMENT_PENDING. One admission can carry several bookings: a hold whose answer an
// outage lost (booking killed after the commit) is made again by the fan under the same token, and the first
// expires unseen; ending the admission then would refuse the payment of the booking the fan is paying for. The
// admission ends with the last of them (or at its token's expiry, if two end at once and each sees the other).
func (s *Holds) releaseAdmission(ctx context.Context, b Booking) {
	if b.AdmissionJTI == "" {
		return
	}
	if s.gate == nil {
		return
	}
	if live, err := s.admissionInUse(ctx, b); err != nil {
		s.log.WarnContext(ctx, "release admission: the fan's other bookings", "booking", b.ID, "err", err)
	} else if live {
		return
	}
	if err := s.gate.Release(ctx, b.ShowID, b.UserID, b.AdmissionJTI, b.AdmissionExp); err != nil {
		s.log.ErrorContext(ctx, "release admission", "booking", b.ID, "err", err)
	}
}

// admissionInUse reports whether another of b's user's recent bookings made under b's admission is still live.
func (s *Holds) admissionInUse(ctx context.Context, b Booking) (bool, error) {
	bs, err := s.store.BookingsOf(ctx, b.UserID, 50)
	if err != nil {
		return false, err
	}
	for _, o := range bs {
		if o.ID != b.ID && o.AdmissionJTI == b.AdmissionJTI && o.ShowID == b.ShowID &&
			(o.Status == StatusHeld || o.Status == StatusPaymentPending) {
			return true, nil
		}
	}
	return false, nil
}
