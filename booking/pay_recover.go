package booking

import (
	"context"
	"log/slog"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// Run is the payments recovery worker: every RecoverEvery (and at once when kicked by a webhook or a cancel) it
// takes over attempts whose owner's lease has passed and finishes them, retries captures and refunds that
// failed, keeps the seats of payments whose outcome is unknown held, and relays the outbox. It returns when ctx
// ends.
func (p *Checkout) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.RecoverEvery)
	defer t.Stop()
	for {
		p.Recover(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// nudge asks the worker for a pass now.
func (p *Checkout) nudge() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Recover does one pass of the worker's work.
func (p *Checkout) Recover(ctx context.Context) {
	as, err := p.store.ClaimAttempts(ctx, p.lease(), 100)
	if err != nil {
		p.log.ErrorContext(ctx, "recover: claim attempts", "err", err)
	}
	for _, a := range as {
		if ctx.Err() != nil {
			return
		}
		p.recoverAttempt(ctx, a)
	}
	// A capture or refund is retried once it has been left alone for a lease: the request that made it is done.
	before := p.cfg.Now().Add(-p.lease())
	if ps, err := p.store.UncapturedPayments(ctx, before, 100); err != nil {
		p.log.ErrorContext(ctx, "recover: uncaptured payments", "err", err)
	} else {
		for _, pay := range ps {
			p.capture(ctx, pay)
			// The sale's own process may have died before it turned the locks into sold seats and freed the
			// fan's queue slot; doing it again is harmless.
			if b, err := p.holds.store.Booking(ctx, pay.BookingID); err == nil && b.Status == StatusConfirmed {
				p.holds.AfterSale(ctx, b)
			}
		}
	}
	if p.cfg.Publish != nil {
		if _, err := p.store.RelayOutbox(ctx, 500, func(e OutboxEvent) error { return p.cfg.Publish(ctx, e) }); err != nil {
			p.log.WarnContext(ctx, "recover: relay outbox", "err", err)
		}
	}
	if rs, err := p.store.PendingRefunds(ctx, before, 100); err != nil {
		p.log.ErrorContext(ctx, "recover: pending refunds", "err", err)
	} else {
		for _, r := range rs {
			p.settleRefund(ctx, r)
		}
	}
}

func (p *Checkout) recoverAttempt(ctx context.Context, a Attempt) {
	switch a.State {
	case AttemptPending:
		if a.NextActionURL != "" {
			p.recoverAction(ctx, a)
			return
		}
		fallthrough
	case AttemptStarted:
		// The same idempotency key returns the first authorization's outcome once the gateway has one (and makes
		// the authorization now if the first call never reached it): never a second one.
		in, err := p.gw.Authorize(ctx, p.authorizeParams(a))
		if payment.ServerError(err) && p.cfg.Now().Sub(a.CreatedAt) > p.cfg.FailingAfter {
			// The live path gives up at the first such answer; the worker, which may be asking after a timeout,
			// asks again for FailingAfter. Nothing is known to be reserved; if something was, the gateway's
			// webhook will say so and reclaim gives it back.
			if p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptRejected,
				Outcome: OutcomeFailed, Detail: "the payment gateway kept failing the request"}) {
				p.backToHeld(ctx, a)
			}
			p.log.WarnContext(ctx, "recover: the gateway kept failing a payment", "attempt", a.ID, "err", err)
			return
		}
		res, err := p.actOnAuthorization(ctx, a, in, err, nil)
		if err == nil && res.Pending {
			if p.cfg.Now().Sub(a.CreatedAt) > p.cfg.GiveUpAfter {
				// A seat must not stay in limbo behind a gateway that never answers. Nothing is known to be
				// reserved; if something was, the gateway's webhook will say so and reclaim gives it back.
				if p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptPending}, To: AttemptRejected,
					Outcome: OutcomeFailed, Detail: "the payment gateway never answered"}) {
					p.backToHeld(ctx, a)
				}
				p.log.WarnContext(ctx, "recover: gave up on a payment", "attempt", a.ID, "age", p.cfg.Now().Sub(a.CreatedAt))
				return
			}
			p.keepHeld(ctx, a)
		}
		level := slog.LevelInfo
		if err == nil && res.Pending {
			level = slog.LevelDebug // asked again, still no answer: once a second per such attempt
		}
		p.log.Log(ctx, level, "recover: payment attempt", "attempt", a.ID, "was", a.State, "pending", res.Pending,
			"err", err)
	case AttemptAuthorized:
		in, err := p.gw.Retrieve(ctx, a.IntentID)
		if err != nil {
			p.log.WarnContext(ctx, "recover: retrieve intent", "attempt", a.ID, "err", err)
			return
		}
		if in.Authorized() || in.Captured() {
			_, err = p.confirmSale(ctx, a, in, nil)
			p.log.InfoContext(ctx, "recover: authorized attempt", "attempt", a.ID, "err", err)
			return
		}
		// Voided or failed at the gateway behind our back: no money to confirm with.
		if p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptAuthorized}, To: AttemptRejected,
			Outcome: OutcomeFailed, Detail: "the authorization lapsed at the gateway"}) {
			p.backToHeld(ctx, a)
		}
	case AttemptVoiding, AttemptRefunding:
		p.returnMoney(ctx, a)
	}
}

// recoverAction settles an attempt waiting for its 3-D Secure challenge. The authorization call cannot tell: under
// its idempotency key it answers requires_action forever, as Stripe does. So the intent is read instead: passed
// (authorized) confirms the booking and captures, failed puts the booking back to HELD for another card, still
// waiting keeps the seats held until the ActionWindow ends, when the intent is cancelled so that a late answer
// cannot take money for a booking that no longer waits for it.
func (p *Checkout) recoverAction(ctx context.Context, a Attempt) {
	in, err := p.gw.Retrieve(ctx, a.IntentID)
	if err != nil {
		p.log.WarnContext(ctx, "recover: retrieve 3-D Secure intent", "attempt", a.ID, "err", err)
		return
	}
	switch {
	case in.RequiresAction() && p.cfg.Now().Sub(a.CreatedAt) > p.cfg.ActionWindow:
		if _, err := p.gw.Void(ctx, in.ID, payment.Key(a.BookingID, a.ID, payment.OpVoid)); err != nil {
			// Perhaps answered meanwhile: the next pass reads the intent again.
			p.log.WarnContext(ctx, "recover: cancel unanswered 3-D Secure", "attempt", a.ID, "err", err)
			return
		}
		err = &payment.Error{Kind: payment.ErrDeclined, Code: "authentication_timeout"}
		in.LastError = "the card's 3-D Secure authentication was not completed in time"
	case in.RequiresAction():
		// Still waiting for the fan.
	case in.Authorized(), in.Captured():
	default:
		// Failed authentication (requires_payment_method) or cancelled at the gateway: nothing was reserved.
		err = &payment.Error{Kind: payment.ErrDeclined, Code: string(in.Status)}
		if in.LastError == "" {
			in.LastError = "the card's 3-D Secure authentication failed"
		}
	}
	res, err := p.actOnAuthorization(ctx, a, in, err, nil)
	if err == nil && res.Pending {
		p.keepHeld(ctx, a)
	}
	p.log.Log(ctx, slog.LevelDebug, "recover: 3-D Secure attempt", "attempt", a.ID, "intent", in.Status,
		"pending", res.Pending, "err", err)
}

// keepHeld extends the locks of a booking whose payment outcome is unknown, so the seats stay the fan's while the
// gateway makes up its mind. A hold that was lost meanwhile is not revived: the outcome, once known, is given back.
func (p *Checkout) keepHeld(ctx context.Context, a Attempt) {
	b, err := p.holds.store.Booking(ctx, a.BookingID)
	if err != nil || (b.Status != StatusHeld && b.Status != StatusPaymentPending) {
		return
	}
	if b.ExpiresAt.Sub(p.cfg.Now()) > p.cfg.HoldMargin/2 {
		return
	}
	if _, err := p.holds.ExtendHold(ctx, b, p.cfg.HoldMargin); err != nil {
		p.log.WarnContext(ctx, "recover: keep pending hold", "booking", b.ID, "err", err)
	}
}

// settleRefund returns a refund's amount at the gateway. Money not yet captured (a capture still being retried)
// is captured first, so that the gateway returns the refund from money it holds, and the books say what the fan
// paid and got back. A refund the policy priced at nothing (a fee as large as the price) needs no gateway call.
func (p *Checkout) settleRefund(ctx context.Context, r Refund) {
	if r.AmountDue == 0 {
		if err := p.store.RefundSucceeded(ctx, r.ID, 0, ""); err != nil {
			p.log.ErrorContext(ctx, "refund: record", "booking", r.BookingID, "err", err)
		}
		return
	}
	pay, err := p.store.PaymentOf(ctx, r.BookingID)
	if err != nil {
		p.log.ErrorContext(ctx, "refund: payment", "booking", r.BookingID, "err", err)
		return
	}
	if pay.CapturedAmount == 0 {
		in, err := p.gw.Capture(ctx, pay.IntentID, payment.Key(pay.BookingID, pay.AttemptID, payment.OpCapture))
		if err != nil {
			p.log.WarnContext(ctx, "refund: capture first", "booking", r.BookingID, "err", err)
			return
		}
		captured := in.AmountReceived
		if captured == 0 {
			captured = pay.Amount
		}
		if err := p.store.MarkCaptured(ctx, pay.ID, captured); err != nil {
			p.log.ErrorContext(ctx, "refund: record capture", "booking", r.BookingID, "err", err)
			return
		}
	}
	ref, err := p.gw.Refund(ctx, payment.RefundParams{IntentID: pay.IntentID, Amount: r.AmountDue,
		Reason: "requested_by_customer", IdempotencyKey: payment.Key(pay.BookingID, r.ID, payment.OpRefund)})
	if err != nil {
		p.log.WarnContext(ctx, "refund", "booking", r.BookingID, "err", err)
		return
	}
	if err := p.store.RefundSucceeded(ctx, r.ID, ref.Amount, ref.ID); err != nil {
		p.log.ErrorContext(ctx, "refund: record", "booking", r.BookingID, "err", err)
	}
}
