package booking

import (
	"context"
	"math"
	"slices"
	"time"
)

// RefundTier is one step of a refund policy: Percent of a seat's price is refunded until UntilHoursBefore hours
// before the show starts.
type RefundTier struct {
	UntilHoursBefore float64
	Percent          int
}

// RefundPolicy is a show's refund policy: its tiers and a fee kept per refunded seat (in minor units). A refund
// takes the tier with the latest deadline still ahead; past the last tier's deadline there is no refund at all.
type RefundPolicy struct {
	Tiers    []RefundTier
	FeeMinor int64
	// Default is true when the show has no policy of its own and follows the deployment's REFUND_WINDOW.
	Default bool
}

// Limits of a policy, so that an operator's typo is refused rather than obeyed.
const (
	maxRefundTiers  = 10
	maxTierHours    = 24 * 366
	maxRefundFeeMin = 1 << 40
)

// DefaultRefundPolicy is the policy of a show without its own: the whole price until window before the show.
func DefaultRefundPolicy(window time.Duration) RefundPolicy {
	return RefundPolicy{Tiers: []RefundTier{{UntilHoursBefore: window.Hours(), Percent: 100}}, Default: true}
}

// Validate checks p as an operator sent it and returns it with its tiers in order, earliest deadline first (most
// hours before the show first).
func (p RefundPolicy) Validate() (RefundPolicy, error) {
	if len(p.Tiers) > maxRefundTiers {
		return p, Unprocessable("refundPolicy: at most %d tiers", maxRefundTiers)
	}
	if p.FeeMinor < 0 || p.FeeMinor > maxRefundFeeMin {
		return p, Unprocessable("refundPolicy.feeMinor must be between 0 and %d", int64(maxRefundFeeMin))
	}
	tiers := slices.Clone(p.Tiers)
	for i, t := range tiers {
		if math.IsNaN(t.UntilHoursBefore) || t.UntilHoursBefore < 0 || t.UntilHoursBefore > maxTierHours {
			return p, Unprocessable("refundPolicy.tiers[%d].untilHoursBefore must be between 0 and %d", i, maxTierHours)
		}
		if t.Percent < 1 || t.Percent > 100 {
			return p, Unprocessable("refundPolicy.tiers[%d].percent must be between 1 and 100", i)
		}
	}
	slices.SortFunc(tiers, func(a, b RefundTier) int {
		switch {
		case a.UntilHoursBefore > b.UntilHoursBefore:
			return -1
		case a.UntilHoursBefore < b.UntilHoursBefore:
			return 1
		}
		return 0
	})
	for i := 1; i < len(tiers); i++ {
		if tiers[i].UntilHoursBefore == tiers[i-1].UntilHoursBefore {
			return p, Unprocessable("refundPolicy: two tiers end %g hours before the show", tiers[i].UntilHoursBefore)
		}
	}
	p.Tiers, p.Default = tiers, false
	return p, nil
}

// Tier returns the tier in force at now for a show starting at startsAt: among the tiers whose deadline is still
// ahead, the one with the latest deadline (a fan always gets the best tier still open); false when none is.
func (p RefundPolicy) Tier(startsAt, now time.Time) (RefundTier, time.Time, bool) {
	var best RefundTier
	var until time.Time
	found := false
	for _, t := range p.Tiers {
		deadline := startsAt.Add(-time.Duration(t.UntilHoursBefore * float64(time.Hour)))
		if now.Before(deadline) && (!found || t.Percent > best.Percent) {
			best, until, found = t, deadline, true
		}
	}
	return best, until, found
}

// ClosesAt is when the last tier ends: no refund after it.
func (p RefundPolicy) ClosesAt(startsAt time.Time) time.Time {
	var last time.Time
	for _, t := range p.Tiers {
		if d := startsAt.Add(-time.Duration(t.UntilHoursBefore * float64(time.Hour))); d.After(last) {
			last = d
		}
	}
	return last
}

// RefundQuote is what refunding some seats of a booking gives back now: per seat, Percent of its price less the
// fee (never below zero), summed.
type RefundQuote struct {
	BookingID   string
	SeatIDs     []string
	SeatsAmount int64 // what the seats cost
	Percent     int
	Fee         int64 // kept per seat
	Amount      int64 // refunded
	Currency    string
	Until       time.Time // when this tier ends (the amount may fall after)
}

// quote prices the refund of seats (with their prices) under tier and fee.
func quote(seats []Seat, tier RefundTier, fee int64) RefundQuote {
	q := RefundQuote{Percent: tier.Percent, Fee: fee, SeatIDs: make([]string, len(seats))}
	for i, s := range seats {
		q.SeatIDs[i] = s.ID
		q.SeatsAmount += s.Price
		q.Amount += max(0, s.Price*int64(tier.Percent)/100-fee)
	}
	return q
}

// RefundableUntil is when refunds of a show's bookings close under its policy.
func (p *Checkout) RefundableUntil(ctx context.Context, show Show) time.Time {
	tp, err := p.TicketPolicy(ctx, show.ID)
	if err != nil {
		return show.StartsAt.Add(-p.cfg.RefundWindow)
	}
	return tp.Refund.ClosesAt(show.StartsAt)
}
