package chaos_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/flashseat/flashseat/loadtest/client"
)

// observe sees one answer of a fan's call: what was asked, when, and what came back (res.Status 0: nothing).
type observe func(what string, began time.Time, res client.Result, err error)

// retry asks until call answers want, waiting out "not now" (no answer, 429, 5xx, and 409 in-progress: an earlier
// try of the same Idempotency-Key still running) as a browser would, until ctx ends, and returns the last answer;
// any other answer is an error. obs, when set, sees every answer.
func retry(ctx context.Context, obs observe, what string, want int, call func() (client.Result, error)) (client.Result, error) {
	var res client.Result
	var err error
	for ctx.Err() == nil {
		began := time.Now()
		res, err = call()
		if obs != nil {
			obs(what, began, res, err)
		}
		switch {
		case res.Status == want:
			return res, nil
		case res.Status == 0 || res.Status == 429 || res.Status >= 500 ||
			(res.Status == http.StatusConflict && res.ProblemSlug() == "in-progress"):
			time.Sleep(100 * time.Millisecond)
		default:
			return res, fmt.Errorf("%s: %s %s", what, client.Outcome(res, err), res.ProblemSlug())
		}
	}
	return res, fmt.Errorf("%s: no answer in time (last %s)", what, client.Outcome(res, err))
}

// newFanResult is a fan's journey to a confirmed booking: the fan who arrives as the last fault ends, or a
// seller on the exchange.
type newFanResult struct {
	confirmed time.Time
	booking   string // the booking confirmed
	receipt   bool   // the waiting room handed out a place receipt
	// unknownShow counts joins the waiting room answered 404 (no such show): it forgot a show it knew.
	unknownShow int
	user, adm   string         // the fan's identity and admission token
	paid        client.Booking // the booking as it was last read, CONFIRMED
	err         error
}

// firstAvailable picks the first AVAILABLE seat of a seat map.
func firstAvailable(m client.SeatMap) []string {
	for _, s := range m.Seats {
		if s.Status == "AVAILABLE" {
			return []string{s.SeatID}
		}
	}
	return nil
}

// bookEndToEnd is a new fan's whole journey on show: guest identity, join, admission, seat map, hold of one seat,
// pay. It waits out "not now" answers as a browser would, without giving up before 30 s.
func bookEndToEnd(ctx context.Context, c *client.Client, show string) newFanResult {
	return journey(ctx, c, show, firstAvailable, 30*time.Second, nil)
}

// admit is a fan's way in: a guest identity, a place in show's line and, once admitted, the admission token.
func admit(ctx context.Context, c *client.Client, show string, obs observe, r *newFanResult) error {
	var g client.Guest
	if _, err := retry(ctx, obs, "guest", 201, func() (res client.Result, err error) { g, res, err = c.NewGuest(ctx); return }); err != nil {
		return err
	}
	r.user = g.Token
	var q client.QueueState
	if _, err := retry(ctx, obs, "join", 200, func() (res client.Result, err error) {
		q, res, err = c.Join(ctx, g.Token, show, "")
		if res.Status == http.StatusNotFound {
			// A waiting room that lost the show with Redis, before booking published it again: the contract
			// wants a 503 there. Recorded, and waited out as a 503 would be.
			r.unknownShow++
			res.Status = http.StatusServiceUnavailable
		}
		return
	}); err != nil {
		return err
	}
	r.receipt = q.Receipt != ""
	for q.Status == "waiting" || q.Status == "admitted" {
		if q.AdmissionToken != "" {
			r.adm = q.AdmissionToken
			return nil
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := retry(ctx, obs, "status", 200, func() (res client.Result, err error) {
			q, res, err = c.QueueStatus(ctx, g.Token, show)
			return
		}); err != nil {
			return err
		}
	}
	return fmt.Errorf("queue: %s", q.Status)
}

// journey is bookEndToEnd for the seats pick chooses from the seat map, given up after within.
func journey(ctx context.Context, c *client.Client, show string, pick func(client.SeatMap) []string,
	within time.Duration, obs observe) (r newFanResult) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if r.err = admit(ctx, c, show, obs, &r); r.err != nil {
		return r
	}
	var m client.SeatMap
	if _, r.err = retry(ctx, obs, "seat map", 200, func() (res client.Result, err error) { m, res, err = c.Seats(ctx, r.user, r.adm, show); return }); r.err != nil {
		return r
	}
	seats := pick(m)
	if len(seats) == 0 {
		r.err = fmt.Errorf("no seat AVAILABLE")
		return r
	}
	key := fmt.Sprintf("late-%d", time.Now().UnixNano())
	var b client.Booking
	if _, r.err = retry(ctx, obs, "hold", 201, func() (res client.Result, err error) {
		b, res, err = c.Hold(ctx, r.user, r.adm, show, seats, key)
		return
	}); r.err != nil {
		return r
	}
	var status int
	if _, r.err = retry(ctx, obs, "pay", 200, func() (res client.Result, err error) {
		r.paid, res, err = c.Pay(ctx, r.user, r.adm, b.BookingID, "pm_card_ok", key)
		status = res.Status
		if status == http.StatusAccepted {
			res.Status = 200 // pending: settled below
		}
		return
	}); r.err != nil {
		return r
	}
	for r.paid.Status != "CONFIRMED" && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if _, r.err = retry(ctx, obs, "booking", 200, func() (res client.Result, err error) {
			r.paid, res, err = c.Booking(ctx, r.user, r.adm, b.BookingID)
			return
		}); r.err != nil {
			return r
		}
	}
	if r.paid.Status != "CONFIRMED" {
		r.err = fmt.Errorf("booking %s is %s after pay answered %d", b.BookingID, r.paid.Status, status)
		return r
	}
	r.confirmed, r.booking = time.Now(), b.BookingID
	return r
}
