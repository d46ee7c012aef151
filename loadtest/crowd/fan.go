package crowd

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

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
	return sleepUntil(ctx, time.Now().Add(d))
}

// sleepUntil sleeps until t, or returns false when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
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

// busy reports answers that mean "not now": the request not read in time (408), rate limited, overloaded, a store
// briefly unreachable (503), booking restarting behind the edge (502, 504). The fan waits and asks again.
func busy(res client.Result) bool {
	switch res.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway,
		http.StatusGatewayTimeout:
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
			p.end(loadtest.OutcomeError, string(step)+": status "+client.Outcome(res, err)+" "+res.ProblemSlug())
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
	p.keepReceipt(q.Receipt)
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

func itoa(n int) string { return client.Outcome(client.Result{Status: n}, nil) }
