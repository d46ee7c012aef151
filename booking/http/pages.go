package http

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

// The fan pages booking renders: the home page's list of upcoming shows and a show's page with its seat map.
// Other pages (checkout, tickets, my bookings) add their handlers in their own files with Server.render.

type homeData struct {
	Date     string
	Filtered bool
	Events   []booking.EventShows
	Choices  []choice // the form's drop-downs
}

// choice is one drop-down of the home page's filters.
type choice struct {
	Name, Label, Any string
	Options          []string
	Selected         string
}

// homePage lists upcoming shows, filtered by the GET form's city, date, genre and language (the same filters as
// GET /api/v1/events).
func (s *Server) homePage(c *fiber.Ctx) error {
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	res, err := s.svc.Search(ctx, q)
	if err != nil {
		return err
	}
	d := homeData{Events: res}
	if !q.Date.IsZero() {
		d.Date = q.Date.Format(time.DateOnly)
	}
	all := res
	if q != (booking.Search{}) {
		d.Filtered = true
		// The filters' choices come from every upcoming show, not only from those the filters left.
		if all, err = s.svc.Search(ctx, booking.Search{}); err != nil {
			return err
		}
	}
	var cities, genres, languages []string
	for _, e := range all {
		genres = appendNew(genres, e.Genre)
		languages = appendNew(languages, e.Language)
		for _, sh := range e.Shows {
			cities = appendNew(cities, sh.City)
		}
	}
	for _, l := range [][]string{cities, genres, languages} {
		slices.Sort(l)
	}
	d.Choices = []choice{
		{Name: "city", Label: "City", Any: "Any city", Options: cities, Selected: spelled(cities, q.City)},
		{Name: "genre", Label: "Genre", Any: "Any genre", Options: genres, Selected: spelled(genres, q.Genre)},
		{Name: "language", Label: "Language", Any: "Any language", Options: languages,
			Selected: spelled(languages, q.Language)},
	}
	return s.render(c, fiber.StatusOK, "home", Page{Title: "Upcoming shows", Nav: "home", Scripts: []string{"home.js"},
		Cache: cachePublic,
		Data:  d})
}

func appendNew(l []string, v string) []string {
	if v == "" || slices.Contains(l, v) {
		return l
	}
	return append(l, v)
}

// spelled returns the option a filter matches as the catalog spells it (filters ignore case), so the form shows it
// selected.
func spelled(options []string, v string) string {
	for _, o := range options {
		if strings.EqualFold(o, v) {
			return o
		}
	}
	return v
}

type priceRow struct {
	Category string
	Amount   int64
}

type showPageData struct {
	Show         booking.Show
	Counts       booking.Counts
	Prices       []priceRow
	MaxSeats     int
	HoldMinutes  int
	QueueEnabled bool
	Resale       bool // the exchange's "Tickets from fans" (resale.js)
}

// showPage renders a show's facts (venue, time, prices, availability) and the seat map, which its script fills
// from the seat API and keeps live from the seat stream. With the show's queue on, the edge lets only admitted
// fans reach it; booking's hold checks admission again.
func (s *Server) showPage(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	sh, counts, err := s.svc.ShowDetail(ctx, id)
	if err != nil {
		return err
	}
	d := showPageData{Show: sh, Counts: counts, MaxSeats: s.svc.MaxSeats(),
		HoldMinutes: int(s.svc.HoldTTL().Minutes()), QueueEnabled: s.svc.QueueEnabled(ctx, id)}
	for cat, amount := range sh.Prices {
		d.Prices = append(d.Prices, priceRow{cat, amount})
	}
	slices.SortFunc(d.Prices, func(a, b priceRow) int {
		return cmp.Or(cmp.Compare(b.Amount, a.Amount), strings.Compare(a.Category, b.Category))
	})
	scripts := []string{"seatmap.js"}
	if s.cfg.Waitlist != nil {
		scripts = append(scripts, "waitlist.js") // the waitlist panel, shown when the show is sold out (waitlist.go)
	}
	if d.Resale = s.cfg.Checkout != nil; d.Resale {
		scripts = append(scripts, "resale.js") // "Tickets from fans", shown when fans resell seats (resale.go)
	}
	return s.render(c, fiber.StatusOK, "show", Page{Title: sh.Title, Scripts: scripts, Cache: cachePrivate, Data: d})
}

// money formats minor units as the pages show prices: "450.00 INR" (two decimals, as every currency the
// platform sells in has).
func money(amount int64, currency string) string {
	sign := ""
	if amount < 0 {
		sign, amount = "-", -amount
	}
	cents := strconv.FormatInt(amount%100, 10)
	if len(cents) < 2 {
		cents = "0" + cents
	}
	return sign + strconv.FormatInt(amount/100, 10) + "." + cents + " " + currency
}

// when formats a time for a page in UTC; the pages' script rewrites it in the reader's zone.
func when(t time.Time) string {
	return t.UTC().Format("Mon 2 Jan 2006, 15:04 UTC")
}
