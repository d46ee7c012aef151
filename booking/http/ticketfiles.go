package http

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket/pdf"
	"github.com/flashseat/flashseat/booking/ticket/wallet"
)

// admitting is the tickets of b that still admit: a refunded (VOID) or reissued (TRANSFERRED) ticket is left off
// the files, so nobody prints a ticket that the door will refuse.
func admitting(ts []booking.Ticket) []booking.Ticket {
	var out []booking.Ticket
	for _, t := range ts {
		if t.Status == booking.TicketValid || t.Status == booking.TicketCheckedIn {
			out = append(out, t)
		}
	}
	return out
}

// ticketsPDF is GET /api/v1/bookings/{id}/tickets.pdf: one page per ticket that still admits.
func (s *Server) ticketsPDF(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	b, err := s.bookingView(ctx, id, UserID(c))
	if err != nil {
		return err
	}
	ts := admitting(b.Tickets)
	if len(ts) == 0 {
		return fmt.Errorf("booking %s has no ticket that admits: %w", id, booking.ErrNotConfirmed)
	}
	if err := ts[0].Printable(); err != nil {
		return err
	}
	show, err := s.svc.Show(ctx, b.ShowID)
	if err != nil {
		return err
	}
	holder, err := s.holder(ctx, b.UserID)
	if err != nil {
		return err
	}
	data, err := pdf.Render(show, b.ID, holder, ts)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, pdf.ContentType)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="tickets-`+b.ID+`.pdf"`)
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	return c.Send(data)
}

// holder is how the tickets of userID name them: their contact's name, else its e-mail; "" when they gave no
// contact or the deployment keeps none.
func (s *Server) holder(ctx context.Context, userID string) (string, error) {
	if s.cfg.Contacts == nil {
		return "", nil
	}
	ct, err := s.cfg.Contacts.Get(ctx, userID)
	if errors.Is(err, booking.ErrNotFound) {
		return "", nil
	}
	return ct.Holder(), err
}

// ticketPass is GET /api/v1/tickets/{id}/pass.pkpass: the ticket as a signed Apple Wallet pass, when the
// deployment configured a pass certificate (404 otherwise). A refunded or transferred ticket has no pass.
func (s *Server) ticketPass(c *fiber.Ctx) error {
	if s.cfg.Passes == nil {
		return fmt.Errorf("wallet passes: no pass certificate is configured: %w", booking.ErrNotFound)
	}
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	t, err := s.cfg.Checkout.Ticket(ctx, id, UserID(c))
	if err != nil {
		return err
	}
	if t.Status != booking.TicketCheckedIn { // a used ticket's pass is still the fan's souvenir
		if err := booking.TicketRefusal(id, t.Status); err != nil {
			return err
		}
	}
	if err := t.Printable(); err != nil {
		return err
	}
	show, err := s.svc.Show(ctx, t.ShowID)
	if err != nil {
		return err
	}
	data, err := s.cfg.Passes.Pass(show, t)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, wallet.ContentType)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="ticket-`+t.ID+`.pkpass"`)
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	return c.Send(data)
}
