package http

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

// A fan's bookings as their pages show them: GET /api/v1/bookings/{id} and GET /api/v1/bookings carry, beside
// the booking, what the checkout, ticket and "My bookings" pages print: the show, each seat's category and price,
// and until when a paid booking can be refunded. Shows and layouts come from the Service's caches, so the extra
// fields cost no query.

type bookingShowJSON struct {
	Title    string    `json:"title"`
	StartsAt time.Time `json:"startsAt"`
	Venue    string    `json:"venue"`
	City     string    `json:"city"`
	Hall     string    `json:"hall"`
}

type bookingSeatJSON struct {
	SeatID   string `json:"seatId"`
	Category string `json:"category"`
	Price    int64  `json:"price"`
}

type bookingDetailJSON struct {
	bookingJSON
	CreatedAt       time.Time         `json:"createdAt"`
	Show            *bookingShowJSON  `json:"show,omitempty"`
	Seats           []bookingSeatJSON `json:"seats"`
	RefundableUntil *time.Time        `json:"refundableUntil,omitempty"`
	// NextAction is the pending 3-D Secure challenge of a PAYMENT_PENDING booking (GET /api/v1/bookings/{id}).
	NextAction *nextActionJSON `json:"nextAction,omitempty"`
}

// bookingDetail renders b with its show and seats. A show that cannot be read (a store hiccup) leaves those out
// rather than failing the booking itself.
func (s *Server) bookingDetail(ctx context.Context, b booking.Booking) bookingDetailJSON {
	out := bookingDetailJSON{bookingJSON: BookingJSON(b).(bookingJSON), CreatedAt: b.CreatedAt, Seats: []bookingSeatJSON{}}
	if b.NextActionURL != "" {
		out.NextAction = &nextActionJSON{Type: "redirect_to_url", URL: b.NextActionURL}
	}
	show, err := s.svc.Show(ctx, b.ShowID)
	if err != nil {
		return out
	}
	out.Show = &bookingShowJSON{Title: show.Title, StartsAt: show.StartsAt, Venue: show.Venue, City: show.City, Hall: show.Hall}
	if seats, err := s.svc.SeatsOf(ctx, b.ShowID, b.SeatIDs); err == nil {
		for _, st := range seats {
			out.Seats = append(out.Seats, bookingSeatJSON{SeatID: st.ID, Category: st.Category, Price: st.Price})
		}
	}
	if s.cfg.Checkout != nil && b.Status == booking.StatusConfirmed {
		until := s.cfg.Checkout.RefundableUntil(ctx, show)
		out.RefundableUntil = &until
	}
	return out
}

// myBookings is GET /api/v1/bookings: the caller's bookings, newest first.
func (s *Server) myBookings(c *fiber.Ctx) error {
	ctx := c.UserContext()
	bs, err := s.svc.Mine(ctx, UserID(c))
	if err != nil {
		return err
	}
	out := make([]bookingDetailJSON, 0, len(bs))
	for _, b := range bs {
		out = append(out, s.bookingDetail(ctx, b))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"bookings": out})
}
