package booking

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashseat/flashseat/booking/ticket"
)

// CheckIn admits the holder of a ticket code at the door: the code's signature is checked first (as an offline
// scanner would), then the ticket is marked used exactly once. by names the staff member or device.
func (p *Payments) CheckIn(ctx context.Context, code, by string) (TicketInfo, error) {
	if code == "" {
		return TicketInfo{}, Invalid("code is required")
	}
	c, err := p.verifier.Verify(code)
	if err != nil {
		if errors.Is(err, ticket.ErrInvalid) {
			return TicketInfo{}, fmt.Errorf("%w: %w", ErrTicketInvalid, err)
		}
		return TicketInfo{}, err
	}
	return p.store.CheckIn(ctx, c.TicketID, c.ShowID, c.SeatID, by, p.cfg.Now())
}

// Ticket returns one of the user's tickets; another user's ticket is ErrNotFound.
func (p *Payments) Ticket(ctx context.Context, id, userID string) (TicketInfo, error) {
	if !ValidID(id) {
		return TicketInfo{}, fmt.Errorf("ticket: %w", ErrNotFound)
	}
	t, err := p.store.TicketByID(ctx, id)
	if err != nil {
		return TicketInfo{}, err
	}
	if t.UserID != userID {
		return TicketInfo{}, fmt.Errorf("ticket %s: %w", id, ErrNotFound)
	}
	return t, nil
}
