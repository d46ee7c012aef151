package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/admission"
)

type holdResponse struct {
	BookingID   string         `json:"bookingId"`
	Status      booking.Status `json:"status"`
	ShowID      string         `json:"showId"`
	SeatIDs     []string       `json:"seatIds"`
	ExpiresAt   time.Time      `json:"expiresAt"`
	TotalAmount int64          `json:"totalAmount"`
	Currency    string         `json:"currency"`
}

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// AdmissionToken is the request's admission token for a show: the X-Admission-Token header, else the waiting
// room's cookie for that show.
func AdmissionToken(c *fiber.Ctx, showID string) string {
	if t := header(c, headerAdmission); t != "" {
		return strings.Clone(t)
	}
	if header(c, headerCookie) == "" {
		return "" // the usual case for API clients: no cookie name to build
	}
	return strings.Clone(c.Cookies(admission.CookieName(showID)))
}

func (s *Server) hold(c *fiber.Ctx) error {
	req, err := decodeHold(c)
	if err != nil {
		return err
	}
	if req.ShowID == "" {
		return booking.Invalid("showId is required")
	}
	if !booking.ValidID(req.ShowID) {
		return booking.ErrNotFound
	}
	key := strings.Clone(header(c, headerIdempotencyKey))
	if len(key) > maxIdempotencyKey {
		return booking.Invalid("Idempotency-Key is longer than %d characters", maxIdempotencyKey)
	}
	b, _, err := s.svc.Hold(c.UserContext(), booking.HoldRequest{
		UserID:         UserID(c),
		ShowID:         req.ShowID,
		SeatIDs:        req.SeatIDs,
		AdmissionToken: AdmissionToken(c, req.ShowID),
		IdempotencyKey: key,
		Language:       pageLanguage(c),
	})
	if err != nil {
		return err
	}
	// A replay answers exactly as the first response did: the hold as it was created.
	return c.Status(fiber.StatusCreated).JSON(holdResponse{BookingID: b.ID, Status: booking.StatusHeld,
		ShowID: b.ShowID, SeatIDs: b.SeatIDs, ExpiresAt: b.ExpiresAt, TotalAmount: b.TotalAmount, Currency: b.Currency})
}

// ticketJSON is a ticket of a booking. With rotating codes it has no code: the holder's page asks
// /api/v1/tickets/{id}/code for one.
type ticketJSON struct {
	TicketID    string               `json:"ticketId"`
	SeatID      string               `json:"seatId"`
	Code        string               `json:"code,omitempty"`
	Status      booking.TicketStatus `json:"status,omitempty"`
	TicketCodes booking.TicketCodes  `json:"ticketCodes,omitempty"`
}

// refundJSON is one refund of a booking: its seats, what the policy gave back, and when.
type refundJSON struct {
	RefundID    string    `json:"refundId"`
	SeatIDs     []string  `json:"seatIds"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	At          time.Time `json:"at"`
	SeatsAmount int64     `json:"seatsAmount"`
	Percent     int       `json:"percent"`
	FeePerSeat  int64     `json:"feePerSeat"`
	Status      string    `json:"status"` // PENDING until the gateway returned the money, then SUCCEEDED
}

func toRefundJSON(r booking.Refund) refundJSON {
	st := "PENDING"
	if r.Succeeded {
		st = "SUCCEEDED"
	}
	return refundJSON{RefundID: r.ID, SeatIDs: r.SeatIDs, Amount: r.AmountDue, Currency: r.Currency, At: r.At,
		SeatsAmount: r.SeatsAmount, Percent: r.Percent, FeePerSeat: r.Fee, Status: st}
}

type bookingJSON struct {
	BookingID   string         `json:"bookingId"`
	Status      booking.Status `json:"status"`
	ShowID      string         `json:"showId"`
	SeatIDs     []string       `json:"seatIds"`
	ExpiresAt   time.Time      `json:"expiresAt"`
	TotalAmount int64          `json:"totalAmount"`
	Currency    string         `json:"currency"`
	PaymentID   string         `json:"paymentId,omitempty"` // absent until paid: the contract says string, never null
	Tickets     []ticketJSON   `json:"tickets"`
	Refunds     []refundJSON   `json:"refunds,omitempty"`
	// Payouts are what the exchange paid the seller for seats sold there (price less the fee).
	Payouts []payoutJSON `json:"payouts,omitempty"`
}

// BookingJSON renders a booking as GET /api/v1/bookings/{id} does.
func BookingJSON(b booking.Booking) any { return toBookingJSON(b) }

func toBookingJSON(b booking.Booking) bookingJSON {
	out := bookingJSON{BookingID: b.ID, Status: b.Status, ShowID: b.ShowID, SeatIDs: b.SeatIDs,
		ExpiresAt: b.ExpiresAt, TotalAmount: b.TotalAmount, Currency: b.Currency, PaymentID: b.PaymentID,
		Tickets: []ticketJSON{}}
	for _, t := range b.Tickets {
		out.Tickets = append(out.Tickets, ticketJSON{TicketID: t.ID, SeatID: t.SeatID, Code: t.Code, Status: t.Status,
			TicketCodes: t.Codes})
	}
	for _, r := range b.Refunds {
		if r.ListingID != "" {
			out.Payouts = append(out.Payouts, toPayoutJSON(r))
			continue
		}
		out.Refunds = append(out.Refunds, toRefundJSON(r))
	}
	return out
}

func (s *Server) getBooking(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	b, err := s.bookingView(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.bookingDetail(c.UserContext(), b))
}

func (s *Server) cancel(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	b, freed, err := s.cancelBooking(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"bookingId": b.ID, "status": b.Status, "seatsReleased": nonNil(freed)})
}
