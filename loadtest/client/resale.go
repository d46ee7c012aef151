package client

import (
	"context"
	"net/http"
	"net/url"
)

// The face-value exchange as fans reach it (openapi.yaml's /api/v1/tickets/{id}/resale, /api/v1/shows/{id}/resale
// and /api/v1/resale/{id}/buy). Listing and withdrawing take the fan's identity only; buying is a hold of the
// listed seat, so it carries the admission token of the listing's show, and the booking it answers is paid with
// Pay. None of these routes takes an Idempotency-Key: after a lost answer a caller finds out what happened by
// reading (ResaleView, Mine) rather than by asking again.

// Listing is a ticket on the exchange as its seller sees it.
type Listing struct {
	ListingID string `json:"listingId"`
	TicketID  string `json:"ticketId"`
	ShowID    string `json:"showId"`
	SeatID    string `json:"seatId"`
	Price     int64  `json:"price"`
	FaceValue int64  `json:"faceValue"`
	Fee       int64  `json:"fee"`
	Payout    int64  `json:"payout"` // what the seller is paid once it sells: the price less the fee
	Status    string `json:"status"` // LISTED, SOLD, WITHDRAWN
}

// Offer is a listing as the public reads it.
type Offer struct {
	ListingID string `json:"listingId"`
	SeatID    string `json:"seatId"`
	Category  string `json:"category"`
	Price     int64  `json:"price"`
	Currency  string `json:"currency"`
}

// SeatCap is the highest price one seat of a booking may be listed at.
type SeatCap struct {
	SeatID string `json:"seatId"`
	Cap    int64  `json:"cap"`
}

// ResaleView is GET /api/v1/bookings/{id}/resale: the exchange as the booking's holder sees it.
type ResaleView struct {
	Open     bool      `json:"open"`
	Seats    []SeatCap `json:"seats"`
	Listings []Listing `json:"listings"` // newest first
}

// ResaleView reads the exchange for the fan's booking: whether it takes listings, each seat's cap, its listings.
func (c *Client) ResaleView(ctx context.Context, user, bookingID string) (ResaleView, Result, error) {
	var v ResaleView
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/bookings/" + url.PathEscape(bookingID) + "/resale",
		bearer: user, out: &v})
	return v, res, err
}

// ListTicket puts the fan's ticket on the exchange at price (minor units). Above the show's cap the answer is a
// 422 price-above-cap; with the exchange off, 409 resale-closed; listed already, 409 ticket-listed.
func (c *Client) ListTicket(ctx context.Context, user, ticketID string, price int64) (Listing, Result, error) {
	var l Listing
	res, err := c.do(ctx, call{method: http.MethodPost, path: ticketResale(ticketID), bearer: user,
		body: map[string]int64{"price": price}, out: &l})
	return l, res, err
}

// WithdrawListing takes the fan's ticket off the exchange: 404 when it is not on it (sold, or withdrawn
// already), 409 listing-held while a buyer's hold of it is live.
func (c *Client) WithdrawListing(ctx context.Context, user, ticketID string) (Listing, Result, error) {
	var l Listing
	res, err := c.do(ctx, call{method: http.MethodDelete, path: ticketResale(ticketID), bearer: user, out: &l})
	return l, res, err
}

func ticketResale(ticketID string) string {
	return "/api/v1/tickets/" + url.PathEscape(ticketID) + "/resale"
}

// Listings reads a show's public listings, cheapest first.
func (c *Client) Listings(ctx context.Context, showID string) ([]Offer, Result, error) {
	var out struct {
		Listings []Offer `json:"listings"`
	}
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/shows/" + url.PathEscape(showID) + "/resale",
		out: &out})
	return out.Listings, res, err
}

// BuyListing holds a listing's seat for the fan at its price: 201 a HELD booking, to pay with Pay; 409
// seats-unavailable when another buyer holds or bought it, or it was withdrawn.
func (c *Client) BuyListing(ctx context.Context, user, admission, listingID string) (Booking, Result, error) {
	var b Booking
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/resale/" + url.PathEscape(listingID) + "/buy",
		bearer: user, admission: admission, out: &b})
	return b, res, err
}
