package http

import (
	"context"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/ticket/qr"
	"github.com/flashseat/flashseat/shared/admission"
)

// paymentRoutes adds pay, refund, tickets, check-in and the gateway's webhook when payments are configured.
func (s *Server) paymentRoutes(a *fiber.App, v1 fiber.Router) {
	if s.cfg.Checkout == nil {
		return
	}
	v1.Get("/payments/config", s.paymentsConfig)
	v1.Post("/bookings/:bookingId/pay", s.RequireUser, s.pay)
	v1.Post("/bookings/:bookingId/refund", s.RequireUser, s.refund)
	v1.Get("/bookings/:bookingId/refund", s.RequireUser, s.refundQuote)
	v1.Get("/tickets/:ticketId", s.RequireUser, s.ticket)
	v1.Get("/tickets/:ticketId/qr.png", s.RequireUser, s.ticketQR)
	v1.Get("/bookings/:bookingId/tickets.pdf", s.RequireUser, s.ticketsPDF)
	v1.Get("/tickets/:ticketId/pass.pkpass", s.RequireUser, s.ticketPass)
	v1.Post("/checkin", s.RequireStaff, s.checkIn)
	s.gateRoutes(v1)
	v1.Post("/tickets/:ticketId/transfer", s.RequireUser, s.sendTransfer)
	v1.Get("/transfers", s.RequireUser, s.myTransfers)
	v1.Post("/transfers/:transferId/claim", s.RequireUser, s.claimTransfer)
	v1.Delete("/transfers/:transferId", s.RequireUser, s.cancelTransfer)
	a.Post("/webhooks/payments", s.paymentWebhook)
}

// bookingView is GET /bookings/{id}'s booking: with its tickets when payments are configured.
func (s *Server) bookingView(ctx context.Context, id, userID string) (booking.Booking, error) {
	if s.cfg.Checkout != nil {
		return s.cfg.Checkout.BookingView(ctx, id, userID)
	}
	return s.svc.Booking(ctx, id, userID)
}

// cancelBooking is DELETE /bookings/{id}: through payments when configured, so an authorization is voided.
func (s *Server) cancelBooking(ctx context.Context, id, userID string) (booking.Booking, []string, error) {
	if s.cfg.Checkout != nil {
		return s.cfg.Checkout.Cancel(ctx, id, userID)
	}
	return s.svc.Cancel(ctx, id, userID)
}

type payRequest struct {
	PaymentMethod string `json:"paymentMethod"`
	ReturnURL     string `json:"returnUrl"`
}

// PublicGateway is what a browser needs to tokenize a card itself, so that the card number never reaches
// booking: which gateway, its publishable key, and the origin of its API.
type PublicGateway struct {
	Provider       string `json:"provider"` // "sim" or "stripe"
	PublishableKey string `json:"publishableKey"`
	APIBase        string `json:"apiBase"`
}

// paymentsConfig is GET /api/v1/payments/config (public: a publishable key is meant to be public).
func (s *Server) paymentsConfig(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.JSON(s.cfg.Gateway)
}

// maxReturnPath bounds returnUrl.
const maxReturnPath = 512

// returnURL turns a pay request's returnUrl, a path on this site, into the absolute URL the gateway sends the
// fan back to after a 3-D Secure challenge. Only a path is accepted (no scheme, no host, no "//" or backslash
// that a browser would read as another host): the gateway's redirect can never lead off the site.
func returnURL(c *fiber.Ctx, path, bookingID string) (string, error) {
	if path == "" {
		path = "/bookings/" + bookingID
	}
	bad := len(path) > maxReturnPath || path[0] != '/' || strings.HasPrefix(path, "//") ||
		strings.ContainsAny(path, "\\#") || strings.IndexFunc(path, func(r rune) bool { return r < 0x21 || r == 0x7f }) >= 0
	if !bad {
		u, err := url.Parse(path)
		bad = err != nil || u.Scheme != "" || u.Host != "" || u.User != nil
	}
	if bad {
		return "", booking.Unprocessable("returnUrl must be a path on this site, such as /bookings/%s", bookingID)
	}
	return siteOrigin(c) + path, nil
}

// siteOrigin is the origin the fan reached the platform at: the page's Origin on a browser's POST, else the
// edge's X-Forwarded-Proto and -Host, else this request's own. Whoever sets these only chooses where their own
// browser comes back to.
func siteOrigin(c *fiber.Ctx) string {
	if o := c.Get(fiber.HeaderOrigin); o != "" {
		if u, err := url.Parse(o); err == nil && (u.Scheme == "http" || u.Scheme == "https") && validHost(u.Host) &&
			u.Path == "" {
			return u.Scheme + "://" + u.Host
		}
	}
	proto, host := c.Get(fiber.HeaderXForwardedProto), c.Get(fiber.HeaderXForwardedHost)
	if proto != "http" && proto != "https" {
		proto = c.Protocol()
	}
	if !validHost(host) {
		host = c.Hostname()
	}
	return proto + "://" + host
}

// validHost accepts a host[:port] made of the characters a host name or an IP literal uses.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return false
		}
	}
	return true
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
	back, err := returnURL(c, req.ReturnURL, id)
	if err != nil {
		return err
	}
	res, err := s.cfg.Checkout.Pay(ctx, booking.PayRequest{BookingID: id, UserID: user,
		PaymentMethod: req.PaymentMethod, IdempotencyKey: strings.Clone(c.Get("Idempotency-Key")), AdmissionToken: tok,
		ReturnURL: back})
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
		out := pendingJSON{BookingID: id, Status: booking.StatusPaymentPending, PaymentID: res.AttemptID}
		if res.NextActionURL != "" {
			out.NextAction = &nextActionJSON{Type: "redirect_to_url", URL: res.NextActionURL}
		}
		return c.Status(fiber.StatusAccepted).JSON(out)
	}
	return c.JSON(BookingJSON(res.Booking))
}

// pendingJSON is a 202 to pay: the outcome comes later, or after the fan passes a 3-D Secure challenge at
// nextAction.url (Stripe's redirect_to_url). paymentId names the payment attempt.
type pendingJSON struct {
	BookingID  string          `json:"bookingId"`
	Status     booking.Status  `json:"status"`
	PaymentID  string          `json:"paymentId,omitempty"`
	NextAction *nextActionJSON `json:"nextAction,omitempty"`
}

type nextActionJSON struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// retryAfter is the Retry-After of a failed payment: the breaker's cool-down left when it is open, else a second.
func retryAfter(err error) int {
	var open *payment.OpenError
	if errors.As(err, &open) {
		return max(1, int(math.Ceil(open.RetryAfter.Seconds())))
	}
	return 1
}

type ticketInfoJSON struct {
	TicketID    string               `json:"ticketId"`
	BookingID   string               `json:"bookingId"`
	ShowID      string               `json:"showId"`
	SeatID      string               `json:"seatId"`
	Status      booking.TicketStatus `json:"status"`
	Code        string               `json:"code,omitempty"`
	TicketCodes booking.TicketCodes  `json:"ticketCodes,omitempty"`
	CheckedInAt *time.Time           `json:"checkedInAt,omitempty"`
}

func ticketInfo(t booking.TicketInfo, withCode bool) ticketInfoJSON {
	out := ticketInfoJSON{TicketID: t.ID, BookingID: t.BookingID, ShowID: t.ShowID, SeatID: t.SeatID, Status: t.Status,
		TicketCodes: t.Codes}
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
	t, err := s.cfg.Checkout.Ticket(c.UserContext(), id, UserID(c))
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
	t, err := s.cfg.Checkout.Ticket(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	if err := t.Printable(); err != nil {
		return err
	}
	png, err := qr.PNG(t.Code, size)
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
	t, err := s.cfg.Checkout.CheckIn(c.UserContext(), req.Code, "staff")
	if err != nil {
		return err
	}
	return c.JSON(ticketInfo(t, false))
}

// paymentWebhook takes the gateway's signed events. Anything it cannot verify or read is a 400, which the gateway
// treats as a failed delivery; every verified event is acknowledged, handled or not, so it is not sent again.
func (s *Server) paymentWebhook(c *fiber.Ctx) error {
	body := append([]byte(nil), c.Body()...)
	if err := s.cfg.Checkout.Webhook(c.UserContext(), body, strings.Clone(c.Get(payment.SignatureHeader))); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"received": true})
}
