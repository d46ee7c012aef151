package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

// Ticket transfers: a fan sends a ticket (POST /api/v1/tickets/{id}/transfer) and gets a claim link whose secret
// rides in the fragment (never sent to a server, so never in a log); the new holder, signed in, posts the secret
// to claim the reissued ticket. Both fans list the transfer (GET /api/v1/transfers).

type transferRequest struct {
	Email string `json:"email"`
}

type transferJSON struct {
	TransferID  string                 `json:"transferId"`
	TicketID    string                 `json:"ticketId"`
	ShowID      string                 `json:"showId"`
	SeatID      string                 `json:"seatId"`
	Status      booking.TransferStatus `json:"status"`
	Direction   string                 `json:"direction"` // "sent" or "received", for the caller
	ToEmail     string                 `json:"toEmail,omitempty"`
	NewTicketID string                 `json:"newTicketId,omitempty"`
	ExpiresAt   time.Time              `json:"expiresAt"`
	CreatedAt   time.Time              `json:"createdAt"`
	EndedAt     *time.Time             `json:"endedAt,omitempty"`
}

func toTransferJSON(t booking.Transfer, user string) transferJSON {
	out := transferJSON{TransferID: t.ID, TicketID: t.TicketID, ShowID: t.ShowID, SeatID: t.SeatID, Status: t.Status,
		Direction: "sent", ToEmail: t.ToEmail, ExpiresAt: t.ExpiresAt, CreatedAt: t.CreatedAt}
	if t.FromUser != user {
		out.Direction, out.ToEmail = "received", ""
	}
	if t.ToUser == user || t.FromUser == user {
		out.NewTicketID = t.NewTicketID
	}
	if !t.EndedAt.IsZero() {
		out.EndedAt = &t.EndedAt
	}
	return out
}

func (s *Server) sendTransfer(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	var req transferRequest
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		if err := decode(c, &req); err != nil {
			return err
		}
	}
	tr, secret, err := s.cfg.Checkout.SendTransfer(c.UserContext(), booking.TransferRequest{TicketID: id,
		UserID: UserID(c), ToEmail: req.Email, SiteURL: siteOrigin(c)})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"transferId": tr.ID, "expiresAt": tr.ExpiresAt,
		"claimUrl": booking.ClaimURL(siteOrigin(c), tr.ID, secret)})
}

type claimRequest struct {
	Secret string `json:"secret"`
}

func (s *Server) claimTransfer(c *fiber.Ctx) error {
	id, err := pathID(c, "transferId", "transfer")
	if err != nil {
		return err
	}
	var req claimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	t, err := s.cfg.Checkout.ClaimTransfer(c.UserContext(), id, req.Secret, UserID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(ticketInfo(t, true))
}

func (s *Server) cancelTransfer(c *fiber.Ctx) error {
	id, err := pathID(c, "transferId", "transfer")
	if err != nil {
		return err
	}
	tr, err := s.cfg.Checkout.CancelTransfer(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(toTransferJSON(tr, UserID(c)))
}

func (s *Server) myTransfers(c *fiber.Ctx) error {
	user := UserID(c)
	ts, err := s.cfg.Checkout.Transfers(c.UserContext(), user)
	if err != nil {
		return err
	}
	out := make([]transferJSON, len(ts))
	for i, t := range ts {
		out[i] = toTransferJSON(t, user)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"transfers": out})
}
