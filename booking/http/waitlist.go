package http

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/acceptlang"
)

func (s *Server) waitlistRoutes(v1 fiber.Router) {
	if s.cfg.Waitlist == nil {
		return
	}
	v1.Post("/shows/:showId/waitlist", s.RequireUser, s.joinWaitlist)
	v1.Get("/shows/:showId/waitlist", s.RequireUser, s.getWaitlist)
	v1.Delete("/shows/:showId/waitlist", s.RequireUser, s.leaveWaitlist)
	v1.Get("/shows/:showId/waitlist/stream", s.RequireUser, s.waitlistStream)
	// Registered before the admin group's middleware runs for the prefix; it carries its own check.
	s.app.Get("/admin/v1/shows/:showId/waitlist", s.RequireAdmin, s.adminWaitlist)
}

// waitlistJSON is a fan's entry as the API shows it; offer only while OFFERED.
func waitlistJSON(e booking.WaitlistEntry) fiber.Map {
	m := fiber.Map{"showId": e.ShowID, "position": e.Position, "seats": e.Seats, "status": e.Status,
		"joinedAt": e.JoinedAt.UTC().Format(time.RFC3339)}
	if e.Category != "" {
		m["category"] = e.Category
	}
	if e.Status == booking.WaitlistOffered && e.Offer != nil {
		m["offer"] = offerJSON(e.Offer)
	}
	return m
}

func offerJSON(o *booking.WaitlistOffer) fiber.Map {
	return fiber.Map{"bookingId": o.BookingID, "seatIds": nonNil(o.SeatIDs),
		"expiresAt": o.ExpiresAt.UTC().Format(time.RFC3339)}
}

// joinWaitlist answers 201 with the fan's entry: their place on a sold-out show's waitlist. Body {"seats",
// "category"?}; the request's Accept-Language is kept as the language of the fan's notifications.
func (s *Server) joinWaitlist(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	var req struct {
		Seats    *int   `json:"seats"`
		Category string `json:"category"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Seats == nil {
		return booking.Invalid("seats is required")
	}
	e, err := s.cfg.Waitlist.Join(c.UserContext(), booking.WaitlistJoin{ShowID: id, UserID: UserID(c),
		Seats: *req.Seats, Category: req.Category, Language: pageLanguage(c)})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(waitlistJSON(e))
}

// languages picks among the languages booking writes to fans in.
var languages = acceptlang.New(booking.Languages...)

// pageLanguage is the one of booking.Languages that the request's Accept-Language prefers, or "" (API clients,
// every request of the load tests, a browser in none of them: their messages are in English).
func pageLanguage(c *fiber.Ctx) string {
	lang, _ := languages.Pick(header(c, headerAcceptLanguage)) // one of ours, not a string in fiber's buffer
	return lang
}

// getWaitlist answers the caller's entry; 404 when they have none.
func (s *Server) getWaitlist(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	e, err := s.cfg.Waitlist.Entry(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(waitlistJSON(e))
}

// leaveWaitlist takes the caller off the waitlist (giving up an open offer) and answers the entry, LEFT.
func (s *Server) leaveWaitlist(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	e, err := s.cfg.Waitlist.Leave(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(waitlistJSON(e))
}

// adminWaitlist is a show's whole waitlist for operators, in line order: {"showId","offerTtlSeconds",
// "entries":[{"userId","position","seats","category","status","passedOver","joinedAt","offer"}]}.
func (s *Server) adminWaitlist(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	es, err := s.cfg.Waitlist.Entries(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(es))
	for _, e := range es {
		m := waitlistJSON(e)
		m["userId"], m["passedOver"] = e.UserID, e.PassedOver
		if e.Offer != nil {
			m["offer"] = offerJSON(e.Offer)
		}
		out = append(out, m)
	}
	return c.JSON(fiber.Map{"showId": id, "offerTtlSeconds": int(s.cfg.Waitlist.OfferTTL().Seconds()), "entries": out})
}

// waitlistStream is the fan's entry as text/event-stream: event "waitlist", data the entry as GET shows it, once
// when the stream opens and again on every change (an offer, its end), so an open page learns of an offer at
// once. A fan with no entry gets event "waitlist" with data {"status":"NONE"}.
func (s *Server) waitlistStream(c *fiber.Ctx) error {
	id, changes, stop, err := s.openStream(c, s.cfg.WaitlistFeed)
	if err != nil {
		return err
	}
	user := UserID(c)
	heartbeat, done, wl, log := s.cfg.Heartbeat, s.done, s.cfg.Waitlist, s.log
	// The writer runs after the handler returned, on a goroutine fasthttp starts for it (its writes go through a
	// pipe the connection copies to the socket): it must not touch c, which fiber reuses for the next request.
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer stop()
		send := func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var data []byte
			e, err := wl.Entry(ctx, id, user)
			switch {
			case err == nil:
				data, _ = json.Marshal(waitlistJSON(e))
			case errors.Is(err, booking.ErrNotFound):
				data = []byte(`{"status":"NONE"}`)
			default:
				log.WarnContext(ctx, "waitlist stream", "err", err)
				return false
			}
			_, _ = w.WriteString("event: waitlist\ndata: ")
			_, _ = w.Write(data)
			_, _ = w.WriteString("\n\n")
			return w.Flush() == nil
		}
		if _, err := w.WriteString("retry: 2000\n"); err != nil || !send() {
			return
		}
		// When the subscription ends the client reconnects and reads its entry afresh.
		pump(w, done, changes, heartbeat, func(msg []byte) bool { return string(msg) != user || send() })
	})
	return nil
}
