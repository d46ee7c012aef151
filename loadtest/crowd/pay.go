package crowd

import (
	"context"
	"net/http"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/google/uuid"
)

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
