package booking

import (
	"context"
	"fmt"
	"math"
)

// PolicyStore keeps the operators' per-show ticket policies.
type PolicyStore interface {
	// TicketPolicy returns the show's own policy; ok is false when it has none (the defaults apply).
	TicketPolicy(ctx context.Context, showID string) (p TicketPolicy, ok bool, err error)
	// SetTicketPolicy stores the show's policy, replacing what it had.
	SetTicketPolicy(ctx context.Context, showID string, p TicketPolicy) error
}

// TicketPolicy is what an operator decides about a show's tickets once sold. A nil Refund follows the
// deployment's default (REFUND_WINDOW); a show without a policy of its own allows transfers until it starts.
type TicketPolicy struct {
	Refund   *RefundPolicy
	Transfer TransferPolicy
	Resale   ResalePolicy
	// Codes is which codes the show's tickets carry at the door; "" is static.
	Codes TicketCodes
}

// TicketPolicy returns the show's ticket policy in force, its defaults filled in.
func (p *Checkout) TicketPolicy(ctx context.Context, showID string) (TicketPolicy, error) {
	if _, err := p.holds.catalog.Show(ctx, showID); err != nil {
		return TicketPolicy{}, err
	}
	tp, ok, err := p.store.TicketPolicy(ctx, showID)
	if err != nil {
		return TicketPolicy{}, err
	}
	if !ok {
		tp.Transfer.Enabled = true
		tp.Resale = DefaultResalePolicy
	}
	if tp.Codes == "" {
		tp.Codes = CodesStatic
	}
	if tp.Refund == nil {
		d := DefaultRefundPolicy(p.cfg.RefundWindow)
		tp.Refund = &d
	}
	return tp, nil
}

// SetTicketPolicy replaces the show's policy after validating it and answers the old and the new one, in force.
func (p *Checkout) SetTicketPolicy(ctx context.Context, showID string, tp TicketPolicy) (old, now TicketPolicy, err error) {
	if tp.Refund != nil {
		v, err := tp.Refund.Validate()
		if err != nil {
			return old, now, err
		}
		tp.Refund = &v
	}
	if c := tp.Transfer.CutoffHours; c != nil && (math.IsNaN(*c) || *c < 0 || *c > maxTierHours) {
		return old, now, Unprocessable("transferPolicy.cutoffHours must be between 0 and %d", maxTierHours)
	}
	if tp.Resale == (ResalePolicy{}) {
		tp.Resale = DefaultResalePolicy // a policy built without a word on resale: the exchange stays closed
	}
	if err := tp.Resale.Validate(); err != nil {
		return old, now, err
	}
	if tp.Codes == "" {
		tp.Codes = CodesStatic
	}
	if err := tp.Codes.Validate(); err != nil {
		return old, now, err
	}
	if old, err = p.TicketPolicy(ctx, showID); err != nil {
		return old, now, err
	}
	if err := p.store.SetTicketPolicy(ctx, showID, tp); err != nil {
		return old, now, fmt.Errorf("ticket policy of %s: %w", showID, err)
	}
	now, err = p.TicketPolicy(ctx, showID)
	return old, now, err
}
