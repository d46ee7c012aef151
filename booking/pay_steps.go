package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/shared/shard"
)

// The steps of the pay saga after the attempt is recorded (Pay, pay.go), each named for what it does; the
// recovery worker (pay_recover.go) and the webhooks (pay_webhook.go) resume a saga at the step its attempt's state
// calls for.

// SaleStore is the ledger's side of a sale: its one transaction, and the payment captured after it.
type SaleStore interface {
	// ConfirmSale is the one transaction of a sale: the booking CONFIRMED with its seats in the ledger (fencing
	// token checked), its payment, tickets, the attempt CONFIRMED and an outbox event. booking.ErrStale,
	// ErrHoldExpired, ErrSeatsUnavailable, ErrNotHeld as the ledger's confirmation returns them.
	ConfirmSale(ctx context.Context, s Sale) (Booking, error)
	PaymentOf(ctx context.Context, bookingID string) (Payment, error)
	MarkCaptured(ctx context.Context, paymentID string, amount int64) error
	// UncapturedPayments lists payments still AUTHORIZED that were last touched before olderThan.
	UncapturedPayments(ctx context.Context, olderThan time.Time, limit int) ([]Payment, error)
}

// runSaga is the live saga of a freshly recorded attempt.
func (p *Checkout) runSaga(ctx context.Context, a Attempt) (PayResult, error) {
	b, err := p.holds.CheckHold(ctx, a.BookingID, a.UserID)
	if err == nil {
		keep := max(b.ExpiresAt.Sub(p.cfg.Now()), p.cfg.HoldMargin)
		b, err = p.holds.ExtendHold(ctx, b, keep)
	}
	if err != nil {
		return p.refuse(ctx, a, err)
	}
	in, err := p.gw.Authorize(ctx, p.authorizeParams(a))
	return p.actOnAuthorization(ctx, a, in, err, &b)
}

func (p *Checkout) authorizeParams(a Attempt) payment.AuthorizeParams {
	return payment.AuthorizeParams{Amount: a.Amount, Currency: a.Currency, PaymentMethod: a.PaymentMethod,
		BookingID: a.BookingID, AttemptID: a.ID, Description: "flashseat booking " + a.BookingID, ReturnURL: a.ReturnURL}
}

// refuse ends an attempt that never reached the gateway because the booking cannot be paid.
func (p *Checkout) refuse(ctx context.Context, a Attempt, cause error) (PayResult, error) {
	outcome := OutcomeNotHeld
	switch {
	case errors.Is(cause, ErrHoldExpired):
		outcome = OutcomeExpired
	case errors.Is(cause, ErrNotHeld):
	default:
		// A store failure, not an answer: give the key up so a retry runs afresh.
		p.abandon(ctx, a)
		return PayResult{}, cause
	}
	p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted}, To: AttemptRejected, Outcome: outcome,
		Detail: cause.Error()})
	return PayResult{}, cause
}

// abandon forgets a STARTED attempt whose gateway call is known not to have taken effect.
func (p *Checkout) abandon(ctx context.Context, a Attempt) {
	if err := p.store.DeleteAttempt(context.WithoutCancel(ctx), a.ID); err != nil {
		p.log.ErrorContext(ctx, "abandon payment attempt", "attempt", a.ID, "err", err)
	}
}

// update applies u, logging failures: the worker repeats whatever a lost update left undone.
func (p *Checkout) update(ctx context.Context, a Attempt, u AttemptUpdate) bool {
	ok, err := p.store.UpdateAttempt(ctx, a.ID, u)
	if err != nil {
		p.log.ErrorContext(ctx, "update payment attempt", "attempt", a.ID, "to", u.To, "err", err)
	}
	return ok
}

// actOnAuthorization acts on the gateway's answer to an authorization: in the live saga, held is the booking it just
// checked and extended; in recovery it is nil.
func (p *Checkout) actOnAuthorization(ctx context.Context, a Attempt, in payment.Intent, err error, held *Booking) (PayResult, error) {
	open := []AttemptState{AttemptStarted, AttemptPending}
	live := held != nil
	switch {
	case err == nil && (in.Authorized() || in.Captured()):
		return p.confirmSale(ctx, a, in, held)
	case err == nil && in.RequiresAction():
		return p.awaitAction(ctx, a, in, held)
	case err == nil, errors.Is(err, payment.ErrTimeout) && ctx.Err() == nil, errors.Is(err, payment.ErrInProgress):
		return p.markPending(ctx, a)
	case ctx.Err() != nil:
		// Stopping: the attempt stays as it is, for the worker of the next process.
		return PayResult{}, fmt.Errorf("payment %s interrupted: %w", a.ID, err)
	case errors.Is(err, payment.ErrDeclined):
		detail := "the card was declined"
		if in.LastError != "" {
			detail = in.LastError
		}
		return p.endUnpaid(ctx, a, AttemptUpdate{From: open, To: AttemptDeclined, Outcome: OutcomeDeclined,
			Detail: detail, IntentID: in.ID}, fmt.Errorf("%w: %s", ErrPaymentDeclined, detail))
	case errors.Is(err, payment.ErrUnavailable) && live:
		// Nothing was reserved (refused connection, open circuit, a 5xx the gateway does not keep under the key):
		// forget the attempt so the fan may retry with the same key. The hold stays.
		p.abandon(ctx, a)
		return PayResult{}, fmt.Errorf("%w: %w", ErrPaymentFailed, err)
	case errors.Is(err, payment.ErrUnavailable):
		return p.markPending(ctx, a)
	case errors.Is(err, payment.ErrNotFound), errors.Is(err, payment.ErrInvalid):
		return p.endUnpaid(ctx, a, AttemptUpdate{From: open, To: AttemptRejected, Outcome: OutcomeInvalidMethod,
			Detail: "the payment method was refused: " + a.PaymentMethod},
			Unprocessable("the payment method %q was refused by the gateway", clip(a.PaymentMethod)))
	default:
		p.log.ErrorContext(ctx, "authorize", "attempt", a.ID, "err", err)
		return p.endUnpaid(ctx, a, AttemptUpdate{From: open, To: AttemptRejected, Outcome: OutcomeFailed,
			Detail: "the payment gateway refused the request"}, fmt.Errorf("%w: %w", ErrPaymentFailed, err))
	}
}

// endUnpaid ends an attempt that reserved no money with answer, putting a PAYMENT_PENDING booking back to HELD.
func (p *Checkout) endUnpaid(ctx context.Context, a Attempt, u AttemptUpdate, answer error) (PayResult, error) {
	if !p.update(ctx, a, u) {
		return p.answerMovedOn(ctx, a)
	}
	p.backToHeld(ctx, a)
	return PayResult{}, answer
}

// answerMovedOn answers for an attempt that someone else moved on (the worker after a lease passed, or the saga it
// overtook): their outcome is the answer, and the attempt's money is theirs to handle.
func (p *Checkout) answerMovedOn(ctx context.Context, a Attempt) (PayResult, error) {
	cur, err := p.store.Attempt(ctx, a.ID)
	if err != nil {
		return PayResult{}, err
	}
	return p.replay(ctx, cur, cur.RequestHash)
}

// markPending records that the gateway's answer is not known yet: the booking shows PAYMENT_PENDING, its seats stay
// held, and the worker asks again after PendingRetry.
func (p *Checkout) markPending(ctx context.Context, a Attempt) (PayResult, error) {
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptPending,
		Outcome: OutcomePending, Lease: p.cfg.Now().Add(p.cfg.PendingRetry)}) {
		// Resolved meanwhile by someone else: marking the booking PAYMENT_PENDING now could strand it there.
		return p.answerMovedOn(ctx, a)
	}
	b, err := p.store.SetStatus(ctx, a.BookingID, []Status{StatusHeld}, StatusPaymentPending)
	if err != nil {
		if b, err = p.holds.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
	}
	return PayResult{Booking: b, Pending: true, AttemptID: a.ID}, nil
}

// awaitAction records that the card asks for a 3-D Secure challenge: not a decline, and no money yet. The attempt
// stays PENDING with its intent and the challenge's URL, the booking shows PAYMENT_PENDING, and the hold is made
// to last the ActionWindow the fan is given. The outcome arrives by webhook (which nudges the worker) or by the
// worker asking the gateway every ActionRetry; a challenge left unanswered is cancelled after ActionWindow.
func (p *Checkout) awaitAction(ctx context.Context, a Attempt, in payment.Intent, held *Booking) (PayResult, error) {
	if in.NextActionURL == "" {
		return p.endUnpaid(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptDeclined,
			Outcome: OutcomeDeclined, Detail: "the card asks for an authentication this checkout cannot perform",
			IntentID: in.ID}, fmt.Errorf("%w: the card asks for an authentication this checkout cannot perform", ErrPaymentDeclined))
	}
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptPending,
		Outcome: OutcomePending, IntentID: in.ID, NextActionURL: in.NextActionURL,
		Lease: p.cfg.Now().Add(p.cfg.ActionRetry)}) {
		return p.answerMovedOn(ctx, a)
	}
	if held != nil {
		if keep := p.cfg.ActionWindow; held.ExpiresAt.Sub(p.cfg.Now()) < keep {
			if b, err := p.holds.ExtendHold(ctx, *held, keep); err == nil {
				held = &b
			} else {
				// The webhook or the worker will find the hold gone and give back whatever the challenge authorizes.
				p.log.WarnContext(ctx, "extend hold for 3-D Secure", "booking", a.BookingID, "err", err)
			}
		}
	}
	b, err := p.store.SetStatus(ctx, a.BookingID, []Status{StatusHeld}, StatusPaymentPending)
	if err != nil {
		if b, err = p.holds.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
	}
	return PayResult{Booking: b, Pending: true, NextActionURL: in.NextActionURL, AttemptID: a.ID}, nil
}

// backToHeld puts a PAYMENT_PENDING booking back to HELD once its attempt ended without money.
func (p *Checkout) backToHeld(ctx context.Context, a Attempt) {
	_, _ = p.store.SetStatus(ctx, a.BookingID, []Status{StatusPaymentPending}, StatusHeld)
}

// confirmSale confirms the booking of an authorized attempt, or gives the money back when the seats are no longer
// the fan's. held, when known, saves reading the booking again: the fields used here never change, and the
// confirmation's transaction checks the status itself.
func (p *Checkout) confirmSale(ctx context.Context, a Attempt, in payment.Intent, held *Booking) (PayResult, error) {
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending, AttemptAuthorized},
		To: AttemptAuthorized, IntentID: in.ID}) {
		// Moved on by someone else (the worker after a lease passed, or the other way round): their answer counts.
		return p.answerMovedOn(ctx, a)
	}
	var b Booking
	if held != nil {
		b = *held
	} else {
		var err error
		if b, err = p.holds.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
		switch b.Status {
		case StatusHeld, StatusPaymentPending:
		case StatusExpired:
			return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
		default:
			if p.confirmedBy(ctx, b, a) {
				return p.answerSold(ctx, a)
			}
			return p.giveBack(ctx, a, in, b, OutcomeNotHeld, ErrNotHeld)
		}
	}
	owned, err := p.holds.locks.Owned(ctx, b)
	if err != nil {
		return PayResult{}, err
	}
	if !owned {
		// Lost locks mean an expired hold, unless the fan cancelled meanwhile (cancel releases them too).
		if cur, err := p.holds.store.Booking(ctx, b.ID); err == nil && cur.Status == StatusCancelled {
			return p.giveBack(ctx, a, in, cur, OutcomeNotHeld, ErrNotHeld)
		}
		return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
	}
	sale := Sale{AttemptID: a.ID, BookingID: b.ID, PaymentID: shard.ID("pay_", b.ShowID), IntentID: in.ID, Amount: a.Amount,
		Currency: a.Currency}
	for _, seat := range b.SeatIDs {
		id := shard.ID("tk_", b.ShowID)
		code, err := p.signer.Sign(id, b.ShowID, seat)
		if err != nil {
			return PayResult{}, err
		}
		sale.Tickets = append(sale.Tickets, Ticket{ID: id, SeatID: seat, Code: code, Status: TicketValid})
	}
	cb, err := p.store.ConfirmSale(ctx, sale)
	switch {
	case err == nil:
	case errors.Is(err, ErrStale), errors.Is(err, ErrHoldExpired):
		return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
	case errors.Is(err, ErrSeatsUnavailable):
		return p.giveBack(ctx, a, in, b, OutcomeConflict, ErrSeatsUnavailable)
	case errors.Is(err, ErrNotHeld):
		if cur, rerr := p.holds.store.Booking(ctx, b.ID); rerr == nil && p.confirmedBy(ctx, cur, a) {
			return p.answerSold(ctx, a)
		}
		return p.giveBack(ctx, a, in, b, OutcomeNotHeld, ErrNotHeld)
	default:
		// Unknown whether it committed: the attempt stays AUTHORIZED and the worker decides after the lease.
		return PayResult{}, err
	}
	p.holds.AfterSale(ctx, cb)
	pay := Payment{ID: sale.PaymentID, BookingID: b.ID, AttemptID: a.ID, IntentID: in.ID, Amount: a.Amount}
	if held == nil {
		p.capture(ctx, pay)
		p.settlePayout(ctx, b.ID)
		return PayResult{Booking: cb}, nil
	}
	// The sale is durable: the fan need not wait another gateway round trip for the capture, which changes
	// nothing they see. Off their path it still runs now; if it fails, or this process stops first, the worker
	// captures the AUTHORIZED payment after a lease.
	p.wg.Add(1)
	cctx, cancel := p.sagaContext(ctx)
	go func() {
		defer p.wg.Done()
		defer cancel()
		p.capture(cctx, pay)
		p.settlePayout(cctx, b.ID) // a resale's seller; the worker settles what this leaves pending
	}()
	return PayResult{Booking: cb}, nil
}

// confirmedBy reports whether b was confirmed with a's money (a repeat of a confirmation that committed).
func (p *Checkout) confirmedBy(ctx context.Context, b Booking, a Attempt) bool {
	if b.Status != StatusConfirmed {
		return false
	}
	pay, err := p.store.PaymentOf(ctx, b.ID)
	return err == nil && pay.AttemptID == a.ID
}

// answerSold answers for an attempt whose sale committed already.
func (p *Checkout) answerSold(ctx context.Context, a Attempt) (PayResult, error) {
	b, err := p.BookingView(ctx, a.BookingID, a.UserID)
	return PayResult{Booking: b}, err
}

// giveBack voids (or refunds) the money of an attempt whose booking cannot be confirmed, marks a booking that
// lost its hold EXPIRED, and returns cause.
func (p *Checkout) giveBack(ctx context.Context, a Attempt, in payment.Intent, b Booking, outcome Outcome, cause error) (PayResult, error) {
	to := AttemptVoiding
	if in.Captured() {
		to = AttemptRefunding
	}
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptAuthorized}, To: to, Outcome: outcome,
		Lease: p.cfg.Now().Add(p.lease())}) {
		// Someone else (the worker, after our lease passed) moved the attempt on, perhaps to a sale whose locks
		// it has just converted — which is why we found them gone. Its outcome is the answer; the money is its.
		return p.answerMovedOn(ctx, a)
	}
	a.State, a.IntentID = to, in.ID
	p.returnMoney(ctx, a)
	if outcome != OutcomeNotHeld {
		p.expire(ctx, b)
	}
	return PayResult{}, fmt.Errorf("booking %s: %w", a.BookingID, cause)
}

// expire ends a hold whose locks are lost, also from PAYMENT_PENDING, and cleans up as the reconciler would.
func (p *Checkout) expire(ctx context.Context, b Booking) {
	eb, err := p.store.SetStatus(ctx, b.ID, []Status{StatusHeld, StatusPaymentPending}, StatusExpired)
	if err != nil {
		return // confirmed, cancelled or expired meanwhile
	}
	p.holds.afterExpiry(ctx, []Booking{eb})
}

// returnMoney gives back the money of a VOIDING or REFUNDING attempt; on failure the worker tries again.
func (p *Checkout) returnMoney(ctx context.Context, a Attempt) {
	switch a.State {
	case AttemptVoiding:
		_, err := p.gw.Void(ctx, a.IntentID, payment.Key(a.BookingID, a.ID, payment.OpVoid))
		if errors.Is(err, payment.ErrState) {
			// Captured after all (a capture raced us): the money must be refunded instead.
			if in, rerr := p.gw.Retrieve(ctx, a.IntentID); rerr == nil && in.Captured() &&
				p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptVoiding}, To: AttemptRefunding}) {
				a.State = AttemptRefunding
				p.returnMoney(ctx, a)
				return
			}
		}
		if err != nil {
			p.log.WarnContext(ctx, "void authorization", "attempt", a.ID, "intent", a.IntentID, "err", err)
			return
		}
		p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptVoiding}, To: AttemptVoided})
	case AttemptRefunding:
		_, err := p.gw.Refund(ctx, payment.RefundParams{IntentID: a.IntentID, Reason: "requested_by_customer",
			IdempotencyKey: payment.Key(a.BookingID, a.ID, payment.OpRefund)})
		if err != nil && !errors.Is(err, payment.ErrState) { // ErrState: nothing left to refund
			p.log.WarnContext(ctx, "refund lost booking", "attempt", a.ID, "intent", a.IntentID, "err", err)
			return
		}
		p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptRefunding}, To: AttemptRefunded})
	}
}

// capture takes the money of a confirmed booking; a failure is left to the worker, never forgotten.
func (p *Checkout) capture(ctx context.Context, pay Payment) {
	in, err := p.gw.Capture(ctx, pay.IntentID, payment.Key(pay.BookingID, pay.AttemptID, payment.OpCapture))
	if err != nil {
		p.log.WarnContext(ctx, "capture", "payment", pay.ID, "intent", pay.IntentID, "err", err)
		return
	}
	amount := in.AmountReceived
	if amount == 0 {
		amount = pay.Amount
	}
	if err := p.store.MarkCaptured(ctx, pay.ID, amount); err != nil {
		p.log.ErrorContext(ctx, "record capture", "payment", pay.ID, "err", err)
	}
}
