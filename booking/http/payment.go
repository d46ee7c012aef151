package http

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
)

// The payments' part of the error table (see codes).
func init() {
	codes = append(codes,
		code{booking.ErrPaymentDeclined, fiber.StatusPaymentRequired, problem.PaymentDeclined},
		code{booking.ErrPaymentFailed, fiber.StatusServiceUnavailable, problem.ServiceUnavailable},
		code{booking.ErrNotConfirmed, fiber.StatusConflict, problem.Conflict},
		code{booking.ErrRefundWindow, fiber.StatusConflict, "refund-window-closed"},
		code{booking.ErrTicketInvalid, fiber.StatusBadRequest, "ticket-invalid"},
		code{booking.ErrAlreadyCheckedIn, fiber.StatusConflict, "already-checked-in"},
		code{booking.ErrTicketVoid, fiber.StatusConflict, "ticket-void"},
		code{booking.ErrWebhook, fiber.StatusBadRequest, problem.BadRequest},
	)
}

// paymentRoutes adds pay, refund, tickets, check-in and the gateway's webhook when payments are configured.
func (s *Server) paymentRoutes(a *fiber.App, v1 fiber.Router) {
	if s.cfg.Payments == nil {
		return
	}
	v1.Post("/bookings/:bookingId/pay", s.RequireUser, s.pay)
	v1.Post("/bookings/:bookingId/refund", s.RequireUser, s.refund)
	v1.Get("/tickets/:ticketId", s.RequireUser, s.ticket)
	v1.Get("/tickets/:ticketId/qr.png", s.RequireUser, s.ticketQR)
	v1.Post("/checkin", s.RequireStaff, s.checkIn)
	a.Post("/webhooks/payments", s.paymentWebhook)
}

// bookingView is GET /bookings/{id}'s booking: with its tickets when payments are configured.
func (s *Server) bookingView(ctx context.Context, id, userID string) (booking.Booking, error) {
	if s.cfg.Payments != nil {
		return s.cfg.Payments.BookingView(ctx, id, userID)
	}
	return s.svc.Booking(ctx, id, userID)
}

// cancelBooking is DELETE /bookings/{id}: through payments when configured, so an authorization is voided.
func (s *Server) cancelBooking(ctx context.Context, id, userID string) (booking.Booking, []string, error) {
	if s.cfg.Payments != nil {
		return s.cfg.Payments.Cancel(ctx, id, userID)
	}
	return s.svc.Cancel(ctx, id, userID)
}

type payRequest struct {
	PaymentMethod string `json:"paymentMethod"`
}

func (s *Server) pay(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	var req payRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ctx, user := c.UserContext(), UserID(c)
	tok := strings.Clone(c.Get(admission.Header))
	if tok == "" {
		// The waiting room's cookie is per show: find the booking's show to read it.
		if b, err := s.svc.Booking(ctx, id, user); err == nil {
			tok = AdmissionToken(c, b.ShowID)
		}
	}
	res, err := s.cfg.Payments.Pay(ctx, booking.PayRequest{BookingID: id, UserID: user,
		PaymentMethod: req.PaymentMethod, IdempotencyKey: strings.Clone(c.Get("Idempotency-Key")), AdmissionToken: tok})
	if res.Replayed {
		c.Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		if errors.Is(err, booking.ErrPaymentFailed) {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfter(err)))
		}
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if res.Pending {
		return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"bookingId": id, "status": booking.StatusPaymentPending})
	}
	return c.JSON(BookingJSON(res.Booking))
}

// retryAfter is the Retry-After of a failed payment: the breaker's cool-down left when it is open, else a second.
func retryAfter(err error) int {
	var open *payment.OpenError
	if errors.As(err, &open) {
		return max(1, int(math.Ceil(open.RetryAfter.Seconds())))
	}
	return 1
}

func (s *Server) refund(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	b, err := s.cfg.Payments.Refund(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"bookingId": b.ID, "status": b.Status})
}

type ticketInfoJSON struct {
	TicketID    string               `json:"ticketId"`
	BookingID   string               `json:"bookingId"`
	ShowID      string               `json:"showId"`
	SeatID      string               `json:"seatId"`
	Status      booking.TicketStatus `json:"status"`
	Code        string               `json:"code,omitempty"`
	CheckedInAt *time.Time           `json:"checkedInAt,omitempty"`
}

func ticketInfo(t booking.TicketInfo, withCode bool) ticketInfoJSON {
	out := ticketInfoJSON{TicketID: t.ID, BookingID: t.BookingID, ShowID: t.ShowID, SeatID: t.SeatID, Status: t.Status}
	if withCode {
		out.Code = t.Code
	}
	if !t.CheckedInAt.IsZero() {
		out.CheckedInAt = &t.CheckedInAt
	}
	return out
}

func (s *Server) ticket(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	t, err := s.cfg.Payments.Ticket(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(ticketInfo(t, true))
}

func (s *Server) ticketQR(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	size := 256
	if v := c.Query("size"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 64 || size > 1024 {
			return booking.Invalid("size must be an integer from 64 to 1024")
		}
	}
	png, err := s.cfg.Payments.TicketQR(c.UserContext(), id, UserID(c), size)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "image/png")
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	return c.Send(png)
}

type checkInRequest struct {
	Code string `json:"code"`
}

func (s *Server) checkIn(c *fiber.Ctx) error {
	var req checkInRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if len(req.Code) > 1024 {
		return booking.Invalid("code is too long")
	}
	t, err := s.cfg.Payments.CheckIn(c.UserContext(), req.Code, "staff")
	if err != nil {
		return err
	}
	return c.JSON(ticketInfo(t, false))
}

// paymentWebhook takes the gateway's signed events. Anything it cannot verify or read is a 400, which the gateway
// treats as a failed delivery; every verified event is acknowledged, handled or not, so it is not sent again.
func (s *Server) paymentWebhook(c *fiber.Ctx) error {
	body := append([]byte(nil), c.Body()...)
	if err := s.cfg.Payments.Webhook(c.UserContext(), body, strings.Clone(c.Get(payment.SignatureHeader))); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"received": true})
}
