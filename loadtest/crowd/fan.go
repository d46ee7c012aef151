package crowd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

// fan plays one fan of a queued sale from arrival to outcome. It owns f until it returns.
type fan struct {
	cr   *Crowd
	f    *loadtest.Fan
	rng  *rand.Rand
	user string
	adm  string
	// receipt is the place receipt of the fan's join, presented again when the waiting room has forgotten it.
	receipt string
	lastPos int // the last position the fan was told; a kept place never moves back
	hot     bool
	size    int

	probe bool // still has to try a booking route without admission
}

func (p *fan) obs(step loadtest.Step, began time.Time, res client.Result, err error) {
	p.cr.rec.Observe(step, began, client.Outcome(res, err))
}

// wait sleeps d (or what the server asked for), bounded by ctx.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff waits before the try-th retry of a "not now" answer: what the server asked for, or an exponential
// delay from 200ms with full jitter, so that a crowd turned away at once does not come back at once.
func (p *fan) backoff(ctx context.Context, try int, retryAfter time.Duration) bool {
	d := 200 * time.Millisecond << min(try, 5)
	d = d/2 + time.Duration(p.rng.Int64N(int64(d/2)+1))
	return wait(ctx, max(d, retryAfter))
}

// busy reports answers that mean "not now": rate limited, overloaded, a store briefly unreachable (503), booking
// restarting behind the edge (502, 504). The fan waits and asks again.
func busy(res client.Result) bool {
	switch res.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// lost reports an answer that may not have reached booking, or whose outcome is unknown: none at all, or the
// edge's 502/504. A request with an idempotency key is sent again with the same key.
func lost(res client.Result) bool {
	return res.Status == 0 || res.Status == http.StatusBadGateway || res.Status == http.StatusGatewayTimeout
}

func (p *fan) end(outcome, detail string) {
	p.f.Outcome, p.f.Detail = outcome, detail
}

// cutOff classifies an end caused by the run's or the fan's own deadline.
func (p *fan) cutOff() {
	if p.cr.runCtx.Err() != nil {
		p.end(loadtest.OutcomeCutOff, "run time bound")
		return
	}
	p.end(loadtest.OutcomePatience, "patience ran out")
}

// until calls step's request until it is answered with want, backing off while the platform says "not now" or
// does not answer. Any other answer, or the end of ctx, ends the fan and returns false.
func (p *fan) until(ctx context.Context, step loadtest.Step, want int, do func() (client.Result, error)) bool {
	for try := 0; ; try++ {
		began := time.Now()
		res, err := do()
		p.obs(step, began, res, err)
		switch {
		case res.Status == want:
			return true
		case ctx.Err() != nil:
			p.cutOff()
			return false
		case !busy(res) && err == nil:
			p.end(loadtest.OutcomeError, string(step)+": status "+client.Outcome(res, err))
			return false
		case !p.backoff(ctx, try, res.RetryAfter):
			p.cutOff()
			return false
		}
	}
}

func (p *fan) play(ctx context.Context) {
	c := p.cr.c
	var g client.Guest
	if !p.until(ctx, loadtest.StepAuth, http.StatusCreated, func() (res client.Result, err error) {
		g, res, err = c.NewGuest(ctx)
		return res, err
	}) {
		return
	}
	p.user, p.f.UserID = g.Token, g.UserID

	var q client.QueueState
	if !p.until(ctx, loadtest.StepJoin, http.StatusOK, func() (res client.Result, err error) {
		q, res, err = c.Join(ctx, p.user, p.cr.showID, "")
		return res, err
	}) {
		return
	}
	p.receipt = q.Receipt
	p.f.Joined, p.f.JoinStatus = p.cr.rec.Since(time.Now()), q.Status
	joined := time.Now()
	switch q.Status {
	case "sold_out":
		p.end(loadtest.OutcomeSoldOut, "join: sold_out")
		return
	case "closed":
		p.end(loadtest.OutcomeClosed, "join: closed")
		return
	}
	if q.Position > 0 {
		p.position(q.Position)
	}

	status := p.await(ctx, q)
	switch status {
	case "admitted":
		p.cr.rec.Observe(loadtest.StepAdmitted, joined, "admitted")
	case "sold_out":
		p.end(loadtest.OutcomeSoldOut, "queue: sold_out")
		return
	case "closed":
		p.end(loadtest.OutcomeClosed, "queue: closed")
		return
	default:
		p.cutOff()
		return
	}
	p.book(ctx)
}

// position records a place in the queue.
func (p *fan) position(pos int) {
	p.lastPos = pos
	now := time.Now()
	ps := p.f.Positions
	if n := len(ps); n > 0 && ps[n-1].Position == pos {
		return // a repeat says nothing new to the fairness check
	}
	if len(ps) == maxPositions {
		// A stadium crowd waits minutes with a new position every tick: halve the record, keeping its spread, so
		// memory stays bounded per fan.
		for i := 0; i < maxPositions/2; i++ {
			ps[i] = ps[2*i]
		}
		ps = ps[:maxPositions/2]
	}
	p.f.Positions = append(ps, loadtest.PositionObs{At: p.cr.rec.Since(now), Position: pos})
}

const maxPositions = 128

// runProbe tries the booking routes without admission: the seat map with no admission token and with the fan's
// user token posing as one, and a hold with no admission token for a seat no hall has, so that a gate that failed
// would cost nothing but an answer other than 401/403 (the violation). It runs while the fan is provably not
// admitted (before the admitted event).
func (p *fan) runProbe(ctx context.Context) {
	p.probe = false
	probes := []func() (client.Result, error){
		func() (client.Result, error) {
			_, res, err := p.cr.c.Seats(ctx, p.user, "", p.cr.showID)
			return res, err
		},
		func() (client.Result, error) {
			_, res, err := p.cr.c.Seats(ctx, p.user, p.user, p.cr.showID)
			return res, err
		},
		func() (client.Result, error) {
			_, res, err := p.cr.c.Hold(ctx, p.user, "", p.cr.showID, []string{probeSeat}, "")
			return res, err
		},
	}
	for _, probe := range probes {
		began := time.Now()
		res, err := probe()
		p.obs(loadtest.StepProbe, began, res, err)
		p.f.Probes = append(p.f.Probes, loadtest.Probe{At: p.cr.rec.Since(time.Now()), Status: res.Status})
	}
}

// probeSeat is a seat id no hall has (row names are letters only), for the hold probe.
const probeSeat = "PROBE0"

// await follows the fan's place over SSE until admitted, sold out or closed, and falls back to polling status if
// the stream cannot be held. It returns the final status ("" when ctx ended first).
func (p *fan) await(ctx context.Context, q client.QueueState) string {
	if q.Status == "admitted" {
		// Join may already admit; the token comes with status (or the stream's admitted event).
		if st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID); err == nil && res.Status == http.StatusOK &&
			st.Status == "admitted" && st.AdmissionToken != "" {
			p.admit(st.AdmissionToken)
			return "admitted"
		}
	}
	final := ""
	err := p.cr.c.Follow(ctx, p.user, p.cr.showID, p.receipt, func(ev client.QueueEvent) bool {
		switch ev.Kind {
		case "position":
			if ev.Position > 0 {
				p.position(ev.Position)
			}
			if t := ticket(ev.ID); t > 0 {
				p.f.Ticket = t
			}
			if p.probe {
				p.runProbe(ctx)
			}
		case "admitted":
			if ev.AdmissionToken == "" {
				return true
			}
			p.admit(ev.AdmissionToken)
			final = "admitted"
			return false
		case "sold_out", "closed":
			final = ev.Kind
			return false
		}
		return true
	})
	if final != "" || ctx.Err() != nil {
		return final
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		p.cr.streamFailures.Add(1)
	}
	// The stream ended without a verdict: poll, as the contract's fallback for clients that cannot hold a stream.
	for {
		began := time.Now()
		st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID)
		p.obs(loadtest.StepStatus, began, res, err)
		if res.Status == http.StatusNotFound {
			// The waiting room has forgotten the fan (its store was lost): join again, with the place receipt.
			if verdict := p.rejoin(ctx); verdict != "" {
				return verdict
			}
			continue
		}
		if res.Status == http.StatusOK {
			switch st.Status {
			case "admitted":
				if st.AdmissionToken != "" {
					p.admit(st.AdmissionToken)
					return "admitted"
				}
			case "sold_out", "closed":
				return st.Status
			default:
				if st.Position > 0 {
					p.position(st.Position)
				}
			}
		}
		d := res.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		if !wait(ctx, d) {
			return ""
		}
	}
}

// rejoin joins again after the waiting room forgot the fan, presenting its place receipt, and records a place
// lost: a re-join that puts the fan behind the last position it was told, or a show the room no longer knows.
// It returns a verdict (admitted, sold_out, closed) when the re-join gave one, else "" to keep waiting.
func (p *fan) rejoin(ctx context.Context) string {
	p.f.Rejoins++
	for try := 0; ctx.Err() == nil; try++ {
		began := time.Now()
		q, res, err := p.cr.c.Join(ctx, p.user, p.cr.showID, p.receipt)
		p.obs(loadtest.StepJoin, began, res, err)
		switch {
		case res.Status == http.StatusOK:
			if q.Receipt != "" {
				p.receipt = q.Receipt
			}
			switch q.Status {
			case "admitted":
				if st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID); err == nil &&
					res.Status == http.StatusOK && st.AdmissionToken != "" {
					p.admit(st.AdmissionToken)
					return "admitted"
				}
				return ""
			case "sold_out", "closed":
				return q.Status
			}
			if p.lastPos > 0 && q.Position > p.lastPos && p.f.PlaceLost == "" {
				p.f.PlaceLost = "re-join put it at " + itoa(q.Position) + ", behind its place " + itoa(p.lastPos)
			}
			if q.Position > 0 {
				p.position(q.Position)
			}
			return ""
		case busy(res) || err != nil:
			if !p.backoff(ctx, try, res.RetryAfter) {
				return ""
			}
		default:
			if p.f.PlaceLost == "" {
				p.f.PlaceLost = "re-join: " + client.Outcome(res, err) + " " + res.ProblemSlug()
			}
			wait(ctx, time.Second)
			return ""
		}
	}
	return ""
}

func (p *fan) admit(tok string) {
	p.adm, p.f.Token = tok, tok
	p.f.IssuedAt, p.f.TokenExp = claimTimes(tok)
	p.f.Admitted, p.f.AdmittedAt = true, p.cr.rec.Since(time.Now())
}

// book fetches the seat map, holds seats (retrying a conflict with the offered alternatives), and pays.
func (p *fan) book(ctx context.Context) {
	sc := p.cr.sc
	c := p.cr.c
	var want []string
	// seats is the fan's copy of the seat map, kept up to date with what each 409 says is taken, as a page kept
	// live by the seat stream would be. The map is fetched again only when the copy has nothing left to offer:
	// a hall of 5,000 seats is half a megabyte of JSON per fetch, for booking to write and the fan to read.
	var seats []client.Seat
	busyTries := 0 // "not now" answers: waited out with backoff, not counted against the fan's attempts
	for attempts := 0; attempts < sc.MaxHoldAttempts; {
		if ctx.Err() != nil {
			p.cutOff()
			return
		}
		if want == nil && seats != nil {
			want = Choose(seats, p.size, p.hot, p.rng)
			seats = nil // one choice from a copy; if that fails too, look at the real map again
		}
		if want == nil {
			began := time.Now()
			m, res, err := c.Seats(ctx, p.user, p.adm, p.cr.showID)
			p.obs(loadtest.StepSeatMap, began, res, err)
			p.tokenAnswer(res)
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
			seats = m.Seats
			want = Choose(seats, p.size, p.hot, p.rng)
			if want == nil {
				p.cr.noSeats(time.Now())
				p.end(loadtest.OutcomeSoldOut, "no seat AVAILABLE")
				return
			}
		}
		key := uuid.NewString()
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
		p.tokenAnswer(res)
		if busy(res) {
			p.backoff(ctx, busyTries, res.RetryAfter)
			busyTries++
			continue
		}
		attempts++
		switch {
		case res.Status == http.StatusCreated:
			p.f.Holds++
			p.f.BookingID, p.f.SeatIDs = b.BookingID, want
			p.pay(ctx, b)
			return
		case res.Status == http.StatusConflict:
			p.f.Conflicts++
			markTaken(seats, res.StringList("unavailable"))
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

// markTaken records in the fan's copy of the map the seats a 409 named as unavailable.
func markTaken(seats []client.Seat, taken []string) {
	if len(seats) == 0 || len(taken) == 0 {
		return
	}
	t := make(map[string]bool, len(taken))
	for _, id := range taken {
		t[id] = true
	}
	for i := range seats {
		if t[seats[i].SeatID] {
			seats[i].Status = "HELD"
		}
	}
}

// tokenAnswer keeps the first answer to a request made with the admission token.
func (p *fan) tokenAnswer(res client.Result) {
	if p.f.TokenStatus == 0 && res.Status != 0 && !busy(res) {
		p.f.TokenStatus = res.Status
		// Whole seconds, as exp is: an answer in exp's own second may already see the token expired.
		p.f.TokenLate = p.f.TokenExp > 0 && time.Now().Unix() >= p.f.TokenExp
	}
}

// pay plays the fan's payment behaviour on a fresh hold.
func (p *fan) pay(ctx context.Context, b client.Booking) {
	switch p.f.Pay {
	case loadtest.PayAbandon:
		p.end(loadtest.OutcomeAbandoned, "")
		return
	case loadtest.PayDeclinedThenOK:
		if st := p.payWith(ctx, b.BookingID, "pm_card_declined"); st != http.StatusPaymentRequired {
			p.settle(ctx, b.BookingID, st, "pm_card_declined")
			return
		}
		p.settle(ctx, b.BookingID, p.payWith(ctx, b.BookingID, "pm_card_ok"), "pm_card_ok")
	case loadtest.PaySlow:
		p.settle(ctx, b.BookingID, p.payWith(ctx, b.BookingID, "pm_card_slow"), "pm_card_slow")
	case loadtest.PayError:
		st := p.payWith(ctx, b.BookingID, "pm_card_error")
		if st == http.StatusOK {
			p.end(loadtest.OutcomeConfirmed, "pm_card_error was approved")
			return
		}
		// The fan gives up on the broken card and lets the seats go (cancelling twice is harmless, so a lost or
		// "not now" answer is simply asked again).
		var res client.Result
		var err error
		for try := 0; try < 4; try++ {
			if try > 0 {
				p.backoff(ctx, try-1, res.RetryAfter)
			}
			began := time.Now()
			res, err = p.cr.c.Cancel(ctx, p.user, p.adm, b.BookingID)
			p.obs(loadtest.StepCancel, began, res, err)
			if (res.Status != 0 && !busy(res)) || ctx.Err() != nil {
				break
			}
		}
		switch res.Status {
		case http.StatusOK:
			p.end(loadtest.OutcomeCancelled, "pm_card_error: "+itoa(st))
		case http.StatusGone:
			// The hold lapsed while the fan retried the broken card: the seats are free all the same.
			p.end(loadtest.OutcomeExpired, "cancel after pm_card_error: the hold had expired")
		default:
			p.end(loadtest.OutcomeError, "cancel after pm_card_error: "+client.Outcome(res, err))
		}
	default:
		p.settle(ctx, b.BookingID, p.payWith(ctx, b.BookingID, "pm_card_ok"), "pm_card_ok")
	}
}

// payWith makes one payment attempt and returns its last answer's status, 0 when none came. One idempotency key
// serves every retry: after a lost answer the key returns the first outcome, and after a 503 (a gateway failure,
// the circuit breaker, an overloaded edge) booking has forgotten the attempt, so the same key starts it afresh.
// After the last try the fan does not wait again: there is nothing left to wait for.
func (p *fan) payWith(ctx context.Context, bookingID, method string) int {
	key := uuid.NewString()
	var res client.Result
	for try := 0; try < payTries; try++ {
		if try > 0 {
			p.backoff(ctx, try-1, res.RetryAfter)
		}
		began := time.Now()
		var err error
		_, res, err = p.cr.c.Pay(ctx, p.user, p.adm, bookingID, method, key)
		p.obs(loadtest.StepPay, began, res, err)
		if res.Status == http.StatusConflict && res.ProblemSlug() == "in-progress" {
			// An earlier try of this key is still being settled (its answer was lost to an outage): the outcome
			// arrives as it does for a 202, on the booking.
			return http.StatusAccepted
		}
		if ctx.Err() != nil || (res.Status != 0 && !busy(res)) {
			return res.Status
		}
	}
	return res.Status
}

// payTries bounds one payment's attempts while the platform answers "not now" (or nothing).
const payTries = 8

// settle turns a pay answer into the fan's outcome, polling the booking while the payment is pending.
func (p *fan) settle(ctx context.Context, bookingID string, status int, method string) {
	switch status {
	case http.StatusOK:
		p.end(loadtest.OutcomeConfirmed, method)
	case http.StatusGone:
		p.end(loadtest.OutcomeExpired, method+": 410")
	case http.StatusPaymentRequired:
		p.end(loadtest.OutcomeError, method+": declined")
	case http.StatusAccepted:
		p.poll(ctx, bookingID, method)
	case http.StatusForbidden, http.StatusUnauthorized:
		p.refused(method)
	default:
		p.end(loadtest.OutcomeError, method+": status "+itoa(status))
	}
}

// poll follows a PAYMENT_PENDING booking until the recovery worker decides it.
func (p *fan) poll(ctx context.Context, bookingID, method string) {
	adm := p.adm
	for ctx.Err() == nil {
		began := time.Now()
		b, res, err := p.cr.c.Booking(ctx, p.user, adm, bookingID)
		p.obs(loadtest.StepPoll, began, res, err)
		switch {
		case res.Status == http.StatusOK:
			switch b.Status {
			case "CONFIRMED":
				p.end(loadtest.OutcomeConfirmed, method+" after pending")
				return
			case "EXPIRED", "CANCELLED", "REFUNDED":
				p.end(loadtest.OutcomeExpired, method+": "+b.Status)
				return
			}
		case res.Status == http.StatusForbidden && adm != "":
			// The token may be revoked once the booking is done; reading one's own booking needs none.
			adm = ""
			continue
		}
		if !wait(ctx, 500*time.Millisecond) {
			break
		}
	}
	p.end(loadtest.OutcomePending, method+": still pending")
}

func itoa(n int) string { return client.Outcome(client.Result{Status: n}, nil) }

// ticket reads a fan's seq from a position event's id. The waiting room names position events
// "p-<seq>-<cursor>" so that Last-Event-ID can resume them; that is its own choice, not the contract's, so an id of
// another shape just leaves the ticket unknown and the queue-order check falls back on positions and timing.
func ticket(id string) int64 {
	rest, ok := strings.CutPrefix(id, "p-")
	if !ok {
		return 0
	}
	seq, _, _ := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// claimTimes reads the iat and exp claims of an admission token without verifying it (the fan is not the
// verifier; the gate is, and the token-accepted invariant checks that it did). Zeros when unreadable.
func claimTimes(tok string) (iat, exp int64) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, 0
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, 0
	}
	var c struct {
		IAT float64 `json:"iat"`
		EXP float64 `json:"exp"`
	}
	if json.Unmarshal(b, &c) != nil {
		return 0, 0
	}
	return int64(c.IAT), int64(c.EXP)
}
