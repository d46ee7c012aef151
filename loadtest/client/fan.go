package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/flashseat/flashseat/shared/pow"
)

// Guest is a fan's identity.
type Guest struct {
	UserID string `json:"userId"`
	Token  string `json:"token"`
}

// NewGuest asks for a guest identity. When the edge asks for a proof of work first (an address minting more
// identities than a person would), the fan solves the challenge the refusal carries, as a browser's page does,
// and asks again with the solution in X-Proof.
func (c *Client) NewGuest(ctx context.Context) (Guest, Result, error) {
	proof := ""
	for attempt := 0; ; attempt++ {
		var g Guest
		res, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/auth/guest", proof: proof, out: &g})
		if err != nil || attempt >= 3 {
			return g, res, err
		}
		ch, ok := res.Challenge()
		if !ok {
			return g, res, err
		}
		if proof, err = c.Solve(ctx, ch); err != nil {
			return g, res, err
		}
	}
}

// QueueState is the answer of join and status.
type QueueState struct {
	Status         string    `json:"status"` // waiting, admitted, sold_out, closed
	Position       int       `json:"position"`
	EtaSeconds     float64   `json:"etaSeconds"`
	AdmissionToken string    `json:"admissionToken"`
	ExpiresAt      time.Time `json:"expiresAt"`
	// Receipt is the signed proof of the fan's place that join hands out; presented again on a re-join, it gets
	// the place back after the waiting room's store forgot it. Empty from a waiting room that issues none.
	Receipt string `json:"receipt"`
	Paused  bool   `json:"paused"` // the operator paused admission; the place is kept
}

// Join puts the fan in the show's queue (or finds its existing place). receipt, when not empty, is the place
// receipt of an earlier join, sent as X-Place-Receipt. When the show's bot protection asks for a proof of work, the
// fan solves the challenge the refusal carries, as a browser's page does, and joins again with the solution.
func (c *Client) Join(ctx context.Context, user, showID, receipt string) (QueueState, Result, error) {
	proof := ""
	for attempt := 0; ; attempt++ {
		q, res, err := c.JoinOnce(ctx, user, showID, receipt, proof)
		if err != nil || attempt >= 3 {
			return q, res, err
		}
		ch, ok := res.Challenge()
		if !ok {
			return q, res, err
		}
		if proof, err = c.Solve(ctx, ch); err != nil {
			return q, res, err
		}
	}
}

// JoinOnce is one join request carrying proof, a solved challenge ("" none), as is: a refusal's challenge is left
// unsolved, as a script that will not pay for its place leaves it.
func (c *Client) JoinOnce(ctx context.Context, user, showID, receipt, proof string) (QueueState, Result, error) {
	var body any
	if proof != "" {
		body = map[string]string{"proof": proof}
	}
	var q QueueState
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/queue/" + url.PathEscape(showID) + "/join",
		bearer: user, receipt: receipt, body: body, out: &q})
	return q, res, err
}

// Challenge reads the proof-of-work challenge a refused join carries (problem member "challenge").
func (r Result) Challenge() (pow.Challenge, bool) {
	if r.Problem == nil || r.Problem.Extensions["challenge"] == nil {
		return pow.Challenge{}, false
	}
	b, err := json.Marshal(r.Problem.Extensions["challenge"])
	var ch pow.Challenge
	if err != nil || json.Unmarshal(b, &ch) != nil || ch.Challenge == "" {
		return pow.Challenge{}, false
	}
	return ch, true
}

// Solve solves a challenge on one core, as one fan's device does (Options.SolveWorkers: more), and returns the
// solution to send as "proof". The work done is counted in Work.
func (c *Client) Solve(ctx context.Context, ch pow.Challenge) (string, error) {
	start := time.Now()
	n, ok := pow.Solve(ch, c.workers, ctx.Done())
	if !ok {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("client: challenge has no solution")
	}
	took := time.Since(start)
	c.Work.add(n+1, took)
	return pow.Encode(ch, n, took), nil
}

// Work counts the proof of work a client's fans did: hashes tried and time spent solving.
type Work struct {
	mu     sync.Mutex
	Hashes int64
	Time   time.Duration
	Solved int64
}

func (w *Work) add(hashes int64, took time.Duration) {
	w.mu.Lock()
	w.Hashes += hashes
	w.Time += took
	w.Solved++
	w.mu.Unlock()
}

// Snapshot returns the counts so far.
func (w *Work) Snapshot() (hashes int64, took time.Duration, solved int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Hashes, w.Time, w.Solved
}

// QueueStatus polls the fan's place; when admitted it carries the admission token.
func (c *Client) QueueStatus(ctx context.Context, user, showID string) (QueueState, Result, error) {
	var q QueueState
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/queue/" + url.PathEscape(showID) + "/status", bearer: user, out: &q})
	return q, res, err
}

// Seat is one seat of a seat map.
type Seat struct {
	SeatID   string `json:"seatId"`
	Row      string `json:"row"`
	Number   int    `json:"number"`
	Category string `json:"category"`
	Price    int64  `json:"price"`
	Status   string `json:"status"` // AVAILABLE, HELD, BOOKED
}

// SeatMap is GET /api/v1/shows/{id}/seats.
type SeatMap struct {
	ShowID string `json:"showId"`
	Seats  []Seat `json:"seats"`
}

// Seats fetches the seat map. admission may be empty (a show without a queue, or a probe the gate must refuse).
func (c *Client) Seats(ctx context.Context, user, admission, showID string) (SeatMap, Result, error) {
	var m SeatMap
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/shows/" + url.PathEscape(showID) + "/seats",
		bearer: user, admission: admission, out: &m, large: true})
	return m, res, err
}

// Ticket is one seat's ticket of a confirmed booking.
type Ticket struct {
	TicketID string `json:"ticketId"`
	SeatID   string `json:"seatId"`
	Code     string `json:"code"`
}

// Booking is the body of hold, pay and GET booking.
type Booking struct {
	BookingID   string    `json:"bookingId"`
	Status      string    `json:"status"`
	ShowID      string    `json:"showId"`
	SeatIDs     []string  `json:"seatIds"`
	ExpiresAt   time.Time `json:"expiresAt"`
	TotalAmount int64     `json:"totalAmount"`
	Currency    string    `json:"currency"`
	PaymentID   string    `json:"paymentId"`
	Tickets     []Ticket  `json:"tickets"`
}

// Hold asks for seats. On 409 the result's problem carries "unavailable" and "alternatives".
func (c *Client) Hold(ctx context.Context, user, admission, showID string, seatIDs []string, idemKey string) (Booking, Result, error) {
	var b Booking
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/bookings/hold", bearer: user, admission: admission,
		idemKey: idemKey, body: map[string]any{"showId": showID, "seatIds": seatIDs}, out: &b})
	return b, res, err
}

// Pay pays a held booking with a test payment method.
func (c *Client) Pay(ctx context.Context, user, admission, bookingID, method, idemKey string) (Booking, Result, error) {
	var b Booking
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/bookings/" + url.PathEscape(bookingID) + "/pay",
		bearer: user, admission: admission, idemKey: idemKey, body: map[string]string{"paymentMethod": method}, out: &b})
	return b, res, err
}

// Booking reads a booking back.
func (c *Client) Booking(ctx context.Context, user, admission, bookingID string) (Booking, Result, error) {
	var b Booking
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/bookings/" + url.PathEscape(bookingID),
		bearer: user, admission: admission, out: &b})
	return b, res, err
}

// Mine lists the fan's bookings (GET /api/v1/bookings), newest first.
func (c *Client) Mine(ctx context.Context, user string) ([]Booking, Result, error) {
	var out struct {
		Bookings []Booking `json:"bookings"`
	}
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/bookings", bearer: user, out: &out})
	return out.Bookings, res, err
}

// Cancel releases a HELD booking.
func (c *Client) Cancel(ctx context.Context, user, admission, bookingID string) (Result, error) {
	return c.do(ctx, call{method: http.MethodDelete, path: "/api/v1/bookings/" + url.PathEscape(bookingID),
		bearer: user, admission: admission})
}

// HoldAt is Hold against another route with the same contract, such as the row-lock baseline's.
func (c *Client) HoldAt(ctx context.Context, path, user, showID string, seatIDs []string, idemKey string) (Booking, Result, error) {
	var b Booking
	res, err := c.do(ctx, call{method: http.MethodPost, path: path, bearer: user, idemKey: idemKey,
		body: map[string]any{"showId": showID, "seatIds": seatIDs}, out: &b})
	return b, res, err
}
