package booking

import (
	"context"
	"fmt"
	"time"
)

// TicketStore is the ledger's side of tickets and check-in.
type TicketStore interface {
	Tickets(ctx context.Context, bookingID string) ([]Ticket, error)
	TicketByID(ctx context.Context, id string) (TicketInfo, error)
	// CheckIn marks a VALID ticket CHECKED_IN, exactly once however many scans race: ErrAlreadyCheckedIn,
	// ErrTicketVoid, ErrNotFound otherwise.
	CheckIn(ctx context.Context, ticketID, showID, seatID, by string, at time.Time) (TicketInfo, error)
}

// CheckIn admits the holder of a ticket code at the door: the code's signature is checked first (as an offline
// scanner would), then the ticket is marked used exactly once. by names the staff member or device.
func (p *Checkout) CheckIn(ctx context.Context, code, by string) (TicketInfo, error) {
	if code == "" {
		return TicketInfo{}, Invalid("code is required")
	}
	now := p.cfg.Now()
	c, err := p.readCode(ctx, code, "", now)
	if err != nil {
		return TicketInfo{}, err
	}
	return p.store.CheckIn(ctx, c.TicketID, c.ShowID, c.SeatID, by, now)
}

// Ticket returns one of the user's tickets as its holder sees it (for a show with rotating codes, without its
// static code); another user's ticket is ErrNotFound.
func (p *Checkout) Ticket(ctx context.Context, id, userID string) (TicketInfo, error) {
	t, err := p.ownTicket(ctx, id, userID)
	if err != nil {
		return TicketInfo{}, err
	}
	ts := []Ticket{t.Ticket}
	if err := p.presentCodes(ctx, t.ShowID, ts); err != nil {
		return TicketInfo{}, err
	}
	t.Ticket = ts[0]
	return t, nil
}

// ownTicket returns one of the user's tickets as the ledger has it.
func (p *Checkout) ownTicket(ctx context.Context, id, userID string) (TicketInfo, error) {
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

// BookingView is the user's booking with its tickets, as GET /bookings/{id} shows it.
func (p *Checkout) BookingView(ctx context.Context, id, userID string) (Booking, error) {
	b, err := p.holds.Booking(ctx, id, userID)
	if err != nil {
		return Booking{}, err
	}
	switch b.Status {
	case StatusConfirmed, StatusRefunded:
		if b.Tickets, err = p.store.Tickets(ctx, b.ID); err != nil {
			return Booking{}, err
		}
		if err := p.presentCodes(ctx, b.ShowID, b.Tickets); err != nil {
			return Booking{}, err
		}
		if b.Refunds, err = p.store.Refunds(ctx, b.ID); err != nil {
			return Booking{}, err
		}
	case StatusPaymentPending:
		// A fan who left the challenge page (a back button, a closed tab) can go back to it from here.
		as, err := p.store.AttemptsOf(ctx, b.ID)
		if err != nil {
			return Booking{}, err
		}
		for _, a := range as {
			if a.State == AttemptPending && a.NextActionURL != "" {
				b.NextActionURL = a.NextActionURL
			}
		}
	}
	return b, nil
}

// TicketStatus is whether a ticket still admits.
type TicketStatus string

// VALID until scanned (CHECKED_IN), refunded (VOID) or reissued to another fan (TRANSFERRED). LISTED while on
// the exchange (VALID again when withdrawn), RESOLD once sold there.
const (
	TicketValid       TicketStatus = "VALID"
	TicketCheckedIn   TicketStatus = "CHECKED_IN"
	TicketVoid        TicketStatus = "VOID"
	TicketTransferred TicketStatus = "TRANSFERRED"
	TicketListed      TicketStatus = "LISTED"
	TicketResold      TicketStatus = "RESOLD"
)

// TicketRefusal is why a ticket in status can no longer be used by its holder (given, sold, refunded, printed
// or scanned): one reason per status that is no longer simply the holder's, nil for VALID.
func TicketRefusal(id string, status TicketStatus) error {
	switch status {
	case TicketValid:
		return nil
	case TicketCheckedIn:
		return fmt.Errorf("ticket %s: %w", id, ErrAlreadyCheckedIn)
	case TicketTransferred:
		return fmt.Errorf("ticket %s was reissued to another fan: %w", id, ErrTransferred)
	case TicketListed:
		return fmt.Errorf("ticket %s is on the exchange: withdraw the listing first: %w", id, ErrTicketListed)
	case TicketResold:
		return fmt.Errorf("ticket %s was sold on the exchange: %w", id, ErrResold)
	}
	return fmt.Errorf("ticket %s: %w", id, ErrTicketVoid)
}

// TicketInfo is a ticket with its state.
type TicketInfo struct {
	Ticket
	BookingID   string
	UserID      string
	ShowID      string
	Status      TicketStatus
	CheckedInAt time.Time
}
