package http

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/showstats"
)

// The operator console's routes (the edge's /admin page calls them through its session; scripts call them with
// the admin token): every upcoming show's figures in one call, the sale opening and close, fan lookups and
// refunds. Each change is recorded in the audit log (audit.go).
func (s *Server) adminRoutes(admin fiber.Router) {
	admin.Get("/stats", s.overview)
	admin.Patch("/shows/:showId", s.patchShow)
	admin.Post("/shows/:showId/close", s.closeSale)
	admin.Get("/bookings/:bookingId", s.adminBooking)
	admin.Get("/users/:userId/bookings", s.adminUserBookings)
	admin.Get("/shows/:showId/report", s.saleReport)
	admin.Get("/shows/:showId/report.csv", s.saleReportCSV)
	if s.cfg.Checkout != nil {
		admin.Post("/bookings/:bookingId/refund", s.adminRefund)
		admin.Get("/shows/:showId", s.adminShow)
		admin.Put("/shows/:showId", s.putShowPolicy)
		admin.Get("/shows/:showId/gate-conflicts", s.gateConflicts)
	}
	if s.cfg.Audit != nil {
		admin.Get("/audit", s.auditList)
	}
}

func (s *Server) overview(c *fiber.Ctx) error {
	shows, err := s.svc.Overview(c.UserContext())
	if err != nil {
		return err
	}
	out := showstats.Stats{At: time.Now().UTC(), Breaker: "closed", Shows: make([]showstats.Show, len(shows))}
	if s.cfg.Checkout != nil {
		if st := s.cfg.Checkout.GatewayState(); st != "" {
			out.Breaker = st
		}
	}
	for i, o := range shows {
		out.Shows[i] = showstats.Show{ShowID: o.Show.ID, Title: o.Show.Title, StartsAt: o.Show.StartsAt,
			SaleStartsAt: o.Show.SaleStartsAt, SaleClosedAt: closedAt(o.Show), Venue: o.Show.Venue,
			City: o.Show.City, Hall: o.Show.Hall, Currency: o.Show.Currency, TotalSeats: o.Total,
			Available: o.Available, Held: o.Held, Booked: o.Booked, Revenue: o.Revenue, HoldsTotal: o.HoldsTotal,
			ConflictsTotal: o.ConflictsTotal, Confirmed: o.Confirmed, PaymentFailures: o.PaymentFailures}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

func closedAt(sh booking.Show) *time.Time {
	if sh.SaleClosedAt.IsZero() {
		return nil
	}
	t := sh.SaleClosedAt
	return &t
}

// saleJSON is a show's sale as PATCH and close answer it (and the audit log records it).
type saleJSON struct {
	ShowID       string     `json:"showId"`
	SaleStartsAt time.Time  `json:"saleStartsAt"`
	SaleClosedAt *time.Time `json:"saleClosedAt"`
}

func sale(sh booking.Show) saleJSON {
	return saleJSON{ShowID: sh.ID, SaleStartsAt: sh.SaleStartsAt, SaleClosedAt: closedAt(sh)}
}

type patchShowRequest struct {
	SaleStartsAt *string `json:"saleStartsAt"`
}

// patchShow moves a show's sale opening (the only field an operator may change once the show exists).
func (s *Server) patchShow(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	var req patchShowRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	if req.SaleStartsAt == nil {
		return booking.Unprocessable("saleStartsAt is required (the only field that may change)")
	}
	at, err := parseTime("saleStartsAt", *req.SaleStartsAt)
	if err != nil {
		return err
	}
	old, now, err := s.svc.SetSaleStart(c.UserContext(), id, at)
	if err != nil {
		return err
	}
	s.record(c, "show.saleStartsAt", id, sale(old), sale(now))
	return c.JSON(sale(now))
}

func (s *Server) closeSale(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	old, now, err := s.svc.CloseSale(c.UserContext(), id)
	if err != nil {
		return err
	}
	if !old.SaleClosedAt.Equal(now.SaleClosedAt) {
		s.record(c, "show.close", id, sale(old), sale(now))
	}
	return c.JSON(sale(now))
}

func (s *Server) adminBooking(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	b, err := s.svc.AdminBooking(c.UserContext(), id)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(adminBookingJSON(b))
}

func (s *Server) adminUserBookings(c *fiber.Ctx) error {
	id, err := pathID(c, "userId", "user")
	if err != nil {
		return err
	}
	bs, err := s.svc.UserBookings(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := make([]AdminBookingJSON, len(bs))
	for i, b := range bs {
		out[i] = adminBookingJSON(b)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"userId": id, "bookings": out})
}

// AdminBookingJSON is a booking as the operator sees it: the fan's view plus whose it is and when it was made.
type AdminBookingJSON struct {
	bookingJSON
	UserID    string    `json:"userId"`
	CreatedAt time.Time `json:"createdAt"`
}

func adminBookingJSON(b booking.Booking) AdminBookingJSON {
	return AdminBookingJSON{bookingJSON: toBookingJSON(b), UserID: b.UserID, CreatedAt: b.CreatedAt}
}
