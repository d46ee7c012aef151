// Package showstats is the body of booking's GET /admin/v1/stats, which the edge's operator console reads about
// once a second and adds the waiting room's figures to: the two sides of one wire contract, written once.
package showstats

import "time"

// Show is one upcoming show's figures as booking knows them: the show, its seats and its sales.
type Show struct {
	ShowID          string     `json:"showId"`
	Title           string     `json:"title"`
	StartsAt        time.Time  `json:"startsAt"`
	SaleStartsAt    time.Time  `json:"saleStartsAt"`
	SaleClosedAt    *time.Time `json:"saleClosedAt"`
	Venue           string     `json:"venue"`
	City            string     `json:"city"`
	Hall            string     `json:"hall"`
	Currency        string     `json:"currency"`
	TotalSeats      int        `json:"totalSeats"`
	Available       int        `json:"available"`
	Held            int        `json:"held"`
	Booked          int        `json:"booked"`
	Revenue         int64      `json:"revenue"`
	HoldsTotal      int64      `json:"holdsTotal"`
	ConflictsTotal  int64      `json:"conflictsTotal"`
	Confirmed       int        `json:"confirmed"`
	PaymentFailures int        `json:"paymentFailures"`
}

// OnSale reports whether the show's sale is open at now: opened, not closed, show not started.
func (s Show) OnSale(now time.Time) bool {
	return !now.Before(s.SaleStartsAt) && s.SaleClosedAt == nil && now.Before(s.StartsAt)
}

// Stats is the whole body: every upcoming show, and the payment gateway breaker's state on the booking replica
// that answered ("closed", "open" or "half-open").
type Stats struct {
	At      time.Time `json:"at"`
	Breaker string    `json:"breaker"`
	Shows   []Show    `json:"shows"`
}
