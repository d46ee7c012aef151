package crowd

import (
	"context"
	"net/http"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/google/uuid"
)

// book fetches the seat map, holds seats (retrying a conflict with the offered alternatives), and pays.
func (p *fan) book(ctx context.Context) {
	sc := p.cr.sc
	c := p.cr.c
	var want []string
	// free is the fan's copy of which seats are free, kept up to date with what each 409 says is taken, as a page
	// kept live by the seat stream would be. The map is fetched again only when the copy has nothing left to offer:
	// a hall of 5,000 seats is half a megabyte of JSON per fetch, for booking to write and the fan to read.
	var free Free
	var hall *Hall    // the hall of the last map fetched
	key := ""         // the Idempotency-Key of the hold of want
	lostHold := false // a hold's answer was lost: booking may have made it
	busyTries := 0    // "not now" answers: waited out with backoff, not counted against the fan's attempts
	for attempts := 0; attempts < sc.MaxHoldAttempts; {
		if ctx.Err() != nil {
			p.cutOff()
			return
		}
		if want == nil && free != nil {
			want = hall.Choose(free, p.size, p.hot, p.rng)
			free = nil // one choice from a copy; if that fails too, look at the real map again
		}
		if want == nil {
			began := time.Now()
			m, res, err := c.Seats(ctx, p.user, p.adm, p.cr.showID)
			p.obs(loadtest.StepSeatMap, began, res, err)
			p.tokenAnswer("seat map", res)
			switch {
			case res.Status == http.StatusOK:
			case busy(res) || (err != nil && ctx.Err() == nil):
				p.backoff(ctx, busyTries, res.RetryAfter)
				busyTries++
				continue
			case res.Status == http.StatusForbidden || res.Status == http.StatusUnauthorized:
				p.refused("seat map")
				return
			default:
				p.end(loadtest.OutcomeError, "seat map: "+client.Outcome(res, err))
				return
			}
			// The copy is a byte a seat of the hall (Free): a fan may hold it through minutes of retries, and ten
			// thousand admitted fans each keeping the map's seats filled the generator's memory (the stadium)
			// until it spent its CPU collecting garbage and read its streams tens of seconds late.
			hall = hallOf(&p.cr.hall, m.Seats)
			free = hall.Free(m.Seats)
			want = hall.Choose(free, p.size, p.hot, p.rng)
			if want == nil {
				p.cr.noSeats(time.Now())
				p.end(loadtest.OutcomeSoldOut, "no seat AVAILABLE")
				return
			}
		}
		if key == "" {
			key = uuid.NewString()
		}
		var b client.Booking
		var res client.Result
		var err error
		for try := 0; try < 2; try++ { // a lost answer is retried with the same key: that is what the key is for
			began := time.Now()
			b, res, err = c.Hold(ctx, p.user, p.adm, p.cr.showID, want, key)
			p.obs(loadtest.StepHold, began, res, err)
			if !lost(res) || ctx.Err() != nil {
				break
			}
			p.backoff(ctx, try, res.RetryAfter)
		}
		p.tokenAnswer("hold", res)
		if busy(res) {
			// The same seats are asked again under the same key: a 502, 504 or 408 may come after booking made
			// the hold, and then the key answers with it.
			lostHold = lostHold || res.Status != http.StatusServiceUnavailable && res.Status != http.StatusTooManyRequests
			p.backoff(ctx, busyTries, res.RetryAfter)
			busyTries++
			continue
		}
		key = "" // the next hold asks for other seats
		attempts++
		switch {
		case res.Status == http.StatusCreated:
			p.f.Holds++
			p.f.BookingID, p.f.SeatIDs = b.BookingID, want
			p.pay(ctx, b)
			return
		case res.Status == http.StatusConflict:
			p.f.Conflicts++
			if free != nil {
				hall.Take(free, res.StringList("unavailable"))
			}
			alt := res.StringList("alternatives")
			if len(alt) > 0 && len(alt) <= sc.GroupMax {
				want = alt
			} else {
				want = nil
			}
		case res.Status == http.StatusForbidden || res.Status == http.StatusUnauthorized:
			p.refused("hold")
			return
		case res.Status == 0:
			want = nil
			lostHold = true
		case res.Status == http.StatusUnprocessableEntity && lostHold:
			// A hold whose answer was lost may have been made: booking then refuses more seats than a fan may
			// hold. The fan looks at its bookings, as a fan told so would, and pays the hold it finds.
			if held, ok := p.heldBooking(ctx); ok {
				p.f.Holds++
				p.f.BookingID, p.f.SeatIDs = held.BookingID, held.SeatIDs
				p.pay(ctx, held)
				return
			}
			p.end(loadtest.OutcomeError, "hold: "+client.Outcome(res, err)+" "+res.ProblemSlug())
			return
		default:
			p.end(loadtest.OutcomeError, "hold: "+client.Outcome(res, err)+" "+res.ProblemSlug())
			return
		}
	}
	p.end(loadtest.OutcomePatience, "no hold after max attempts")
}

// refused ends a fan whose admission token a booking route refused: its expiry, or the gate failing it.
func (p *fan) refused(route string) {
	if p.f.TokenExp > 0 && time.Now().Unix() >= p.f.TokenExp {
		p.end(loadtest.OutcomeTokenGone, route+": admission token expired")
		return
	}
	p.f.RefusedAt = p.cr.rec.Since(time.Now())
	p.end(loadtest.OutcomeRefused, route+": admission token refused")
}

// heldBooking finds the fan's HELD booking for the show, if any.
func (p *fan) heldBooking(ctx context.Context) (client.Booking, bool) {
	bs, res, err := p.cr.c.Mine(ctx, p.user)
	if err != nil || res.Status != http.StatusOK {
		return client.Booking{}, false
	}
	for _, b := range bs {
		if b.ShowID == p.cr.showID && b.Status == "HELD" {
			return b, true
		}
	}
	return client.Booking{}, false
}

// tokenAnswer keeps the first answer to a request made with the admission token.
func (p *fan) tokenAnswer(route string, res client.Result) {
	if p.f.TokenStatus == 0 && res.Status != 0 && !busy(res) {
		p.f.TokenStatus = res.Status
		// Whole seconds, as exp is: an answer in exp's own second may already see the token expired.
		p.f.TokenLate = p.f.TokenExp > 0 && time.Now().Unix() >= p.f.TokenExp
		if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden {
			p.f.TokenRefusal = refusal(route, res)
		}
	}
}

// refusal describes a 401 or 403: the route, the status, the problem's type and the reason the gate gave
// ("revoked", "expired", ...), so that a refused admitted fan in a report says who refused it and why.
func refusal(route string, res client.Result) string {
	s := route + ": " + itoa(res.Status)
	if slug := res.ProblemSlug(); slug != "" {
		s += " " + slug
	}
	if r := res.String("reason"); r != "" {
		s += " (" + r + ")"
	}
	return s
}
