package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

type showSummaryJSON struct {
	ShowID         string    `json:"showId"`
	StartsAt       time.Time `json:"startsAt"`
	Venue          string    `json:"venue"`
	City           string    `json:"city"`
	Hall           string    `json:"hall"`
	AvailableSeats int       `json:"availableSeats"`
	TotalSeats     int       `json:"totalSeats"`
	QueueEnabled   bool      `json:"queueEnabled"`
}

type eventJSON struct {
	EventID         string            `json:"eventId"`
	Title           string            `json:"title"`
	Kind            string            `json:"kind"`
	Genre           string            `json:"genre"`
	Language        string            `json:"language"`
	DurationMinutes int               `json:"durationMinutes"`
	Shows           []showSummaryJSON `json:"shows"`
}

func (s *Server) searchEvents(c *fiber.Ctx) error {
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	res, err := s.svc.Search(c.UserContext(), q)
	if err != nil {
		return err
	}
	out := make([]eventJSON, 0, len(res))
	for _, e := range res {
		ej := eventJSON{EventID: e.ID, Title: e.Title, Kind: e.Kind, Genre: e.Genre, Language: e.Language,
			DurationMinutes: e.DurationMinutes, Shows: make([]showSummaryJSON, 0, len(e.Shows))}
		for _, sh := range e.Shows {
			ej.Shows = append(ej.Shows, showSummaryJSON{ShowID: sh.ID, StartsAt: sh.StartsAt, Venue: sh.Venue,
				City: sh.City, Hall: sh.Hall, AvailableSeats: sh.AvailableSeats, TotalSeats: sh.TotalSeats,
				QueueEnabled: sh.QueueEnabled})
		}
		out = append(out, ej)
	}
	c.Set(fiber.HeaderCacheControl, cachePublic)
	return c.JSON(fiber.Map{"events": out})
}

// searchQuery reads the catalog filters of GET /api/v1/events and of the home page's form.
func searchQuery(c *fiber.Ctx) (booking.Search, error) {
	q := booking.Search{City: strings.Clone(c.Query("city")), Query: strings.Clone(c.Query("q")),
		Genre: strings.Clone(c.Query("genre")), Language: strings.Clone(c.Query("language"))}
	if d := c.Query("date"); d != "" {
		t, err := time.Parse(time.DateOnly, d)
		if err != nil {
			return q, booking.Invalid("date must be YYYY-MM-DD")
		}
		q.Date = t
	}
	return q, nil
}

type showJSON struct {
	ShowID         string           `json:"showId"`
	EventID        string           `json:"eventId"`
	Title          string           `json:"title"`
	StartsAt       time.Time        `json:"startsAt"`
	SaleStartsAt   time.Time        `json:"saleStartsAt"`
	Venue          string           `json:"venue"`
	City           string           `json:"city"`
	Hall           string           `json:"hall"`
	Currency       string           `json:"currency"`
	Prices         map[string]int64 `json:"prices"`
	AvailableSeats int              `json:"availableSeats"`
	TotalSeats     int              `json:"totalSeats"`
	QueueEnabled   bool             `json:"queueEnabled"`
	// MaxSeatsPerBooking is MAX_SEATS_PER_BOOKING: the most seats one hold (or waitlist entry) may ask for.
	MaxSeatsPerBooking int `json:"maxSeatsPerBooking"`
	// SaleClosedAt is when an operator closed the sale; absent while it is open.
	SaleClosedAt *time.Time `json:"saleClosedAt,omitempty"`
}

func (s *Server) showDetail(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	sh, counts, err := s.svc.ShowDetail(c.UserContext(), id)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, cachePublic)
	return c.JSON(showJSON{ShowID: sh.ID, EventID: sh.EventID, Title: sh.Title, StartsAt: sh.StartsAt,
		SaleStartsAt: sh.SaleStartsAt, Venue: sh.Venue, City: sh.City, Hall: sh.Hall, Currency: sh.Currency,
		Prices: sh.Prices, AvailableSeats: counts.Available, TotalSeats: counts.Total,
		QueueEnabled: s.svc.QueueEnabled(c.UserContext(), id), MaxSeatsPerBooking: s.svc.MaxSeats(), SaleClosedAt: closedAt(sh)})
}

type seatJSON struct {
	SeatID   string             `json:"seatId"`
	Row      string             `json:"row"`
	Number   int                `json:"number"`
	Category string             `json:"category"`
	Price    int64              `json:"price"`
	Status   booking.SeatStatus `json:"status"`
}

func (s *Server) seatMap(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	seats, err := s.svc.SeatMap(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := make([]seatJSON, len(seats))
	for i, st := range seats {
		out[i] = seatJSON{SeatID: st.ID, Row: st.Row, Number: st.Number, Category: st.Category, Price: st.Price,
			Status: st.Status}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"showId": id, "seats": out})
}

// Operator API.

type venueRequest struct {
	Name  string `json:"name"`
	City  string `json:"city"`
	Halls []struct {
		Name string `json:"name"`
		Rows []struct {
			Row      string `json:"row"`
			Seats    int    `json:"seats"`
			Category string `json:"category"`
		} `json:"rows"`
	} `json:"halls"`
}

func (s *Server) createVenue(c *fiber.Ctx) error {
	var req venueRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	v := booking.Venue{Name: req.Name, City: req.City}
	for _, h := range req.Halls {
		hall := booking.Hall{Name: h.Name}
		for _, r := range h.Rows {
			hall.Rows = append(hall.Rows, booking.Row{Label: r.Row, Seats: r.Seats, Category: r.Category})
		}
		v.Halls = append(v.Halls, hall)
	}
	v, err := s.svc.CreateVenue(c.UserContext(), v)
	if err != nil {
		return err
	}
	type hallJSON struct {
		HallID string `json:"hallId"`
		Name   string `json:"name"`
		Seats  int    `json:"seats"`
	}
	halls := make([]hallJSON, len(v.Halls))
	for i, h := range v.Halls {
		halls[i] = hallJSON{HallID: h.ID, Name: h.Name, Seats: h.Seats()}
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"venueId": v.ID, "halls": halls})
}

type eventRequest struct {
	Title           string `json:"title"`
	Kind            string `json:"kind"`
	Genre           string `json:"genre"`
	Language        string `json:"language"`
	DurationMinutes int    `json:"durationMinutes"`
}

func (s *Server) createEvent(c *fiber.Ctx) error {
	var req eventRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	e, err := s.svc.CreateEvent(c.UserContext(), booking.Event{Title: req.Title, Kind: req.Kind, Genre: req.Genre,
		Language: req.Language, DurationMinutes: req.DurationMinutes})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"eventId": e.ID})
}

type showRequest struct {
	EventID      string           `json:"eventId"`
	HallID       string           `json:"hallId"`
	StartsAt     string           `json:"startsAt"`
	SaleStartsAt string           `json:"saleStartsAt"`
	Currency     string           `json:"currency"`
	Prices       map[string]int64 `json:"prices"`
}

func (s *Server) createShow(c *fiber.Ctx) error {
	var req showRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	sh := booking.Show{EventID: req.EventID, HallID: req.HallID, Currency: req.Currency, Prices: req.Prices}
	var err error
	if sh.StartsAt, err = parseTime("startsAt", req.StartsAt); err != nil {
		return err
	}
	if sh.SaleStartsAt, err = parseTime("saleStartsAt", req.SaleStartsAt); err != nil {
		return err
	}
	sh, err = s.svc.CreateShow(c.UserContext(), sh)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"showId": sh.ID})
}

func parseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, booking.Unprocessable("%s is required", field)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, booking.Unprocessable("%s must be an RFC 3339 time", field)
	}
	return t, nil
}

func (s *Server) showStats(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	st, err := s.svc.Stats(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"totalSeats": st.Total, "available": st.Available, "held": st.Held, "booked": st.Booked,
		"revenue": st.Revenue, "holdsTotal": st.HoldsTotal, "conflictsTotal": st.ConflictsTotal})
}
