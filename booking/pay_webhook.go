package booking

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashseat/flashseat/booking/payment"
)

// WebhookStore remembers the gateway's webhook events, so a redelivery changes nothing.
type WebhookStore interface {
	// SeenEvent records a webhook event id; false when it was recorded before.
	SeenEvent(ctx context.Context, id, typ, intentID string) (bool, error)
}

// Webhook handles one signed event from the gateway. Events are deduplicated by id. The saga and the worker never
// need them (they ask the gateway themselves); an event only makes things happen sooner, and catches money that
// arrived where no booking wants it: a success for an attempt whose booking expired or was cancelled is given back.
func (p *Checkout) Webhook(ctx context.Context, body []byte, signature string) error {
	if p.cfg.WebhookSecret == "" {
		// Without a secret anyone could sign; refuse everything rather than trust anything.
		return fmt.Errorf("%w: no webhook secret is configured", ErrWebhook)
	}
	if err := payment.VerifySignature(body, signature, p.cfg.WebhookSecret, p.cfg.WebhookTolerance, p.cfg.Now()); err != nil {
		return fmt.Errorf("%w: %w", ErrWebhook, err)
	}
	ev, err := payment.ParseEvent(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWebhook, err)
	}
	fresh, err := p.store.SeenEvent(ctx, ev.ID, ev.Type, ev.IntentID)
	if err != nil || !fresh {
		return err
	}
	switch ev.Type {
	case payment.EventAuthorized, payment.EventSucceeded:
	case payment.EventFailed:
		// A failed 3-D Secure challenge: the worker reads the intent and puts the booking back to HELD. A decline
		// of the live saga finds its attempt no longer PENDING and is ignored.
		if a, err := p.store.AttemptByIntent(ctx, ev.IntentID); err == nil && a.State == AttemptPending {
			p.wake(ctx, a)
		}
		return nil
	default:
		return nil
	}
	a, err := p.store.AttemptByIntent(ctx, ev.IntentID)
	if errors.Is(err, ErrNotFound) && ev.Metadata[payment.MetaAttempt] != "" && ValidID(ev.Metadata[payment.MetaAttempt]) {
		// An authorization we timed out on: the attempt does not know its intent yet.
		a, err = p.store.Attempt(ctx, ev.Metadata[payment.MetaAttempt])
	}
	if errors.Is(err, ErrNotFound) {
		p.reclaimOrphan(ctx, ev)
		return nil
	}
	if err != nil {
		return err
	}
	switch a.State {
	case AttemptPending:
		p.wake(ctx, a)
	case AttemptDeclined, AttemptRejected, AttemptVoided:
		// We believed no money was held for this attempt, yet the gateway says otherwise.
		p.reclaim(ctx, a, ev.IntentID)
	}
	return nil
}

// wake lets the worker fetch a PENDING attempt's answer now, which is in, rather than at its next retry.
func (p *Checkout) wake(ctx context.Context, a Attempt) {
	p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptPending}, To: AttemptPending, Lease: p.cfg.Now()})
	p.nudge()
}

// reclaim gives back money the gateway holds for an attempt that ended without a sale.
func (p *Checkout) reclaim(ctx context.Context, a Attempt, intentID string) {
	sctx, cancel := p.sagaContext(ctx)
	defer cancel()
	in, err := p.gw.Retrieve(sctx, intentID)
	if err != nil {
		p.log.WarnContext(ctx, "webhook: retrieve", "intent", intentID, "err", err)
		return
	}
	to := AttemptVoiding
	switch {
	case in.Captured():
		to = AttemptRefunding
	case !in.Authorized():
		return
	}
	if p.update(sctx, a, AttemptUpdate{From: []AttemptState{a.State}, To: to, IntentID: intentID,
		Lease: p.cfg.Now().Add(p.lease())}) {
		a.State, a.IntentID = to, intentID
		p.log.WarnContext(ctx, "webhook: money for a booking without a sale, giving it back", "attempt", a.ID,
			"intent", intentID, "state", to)
		p.returnMoney(sctx, a)
	}
}

// reclaimOrphan gives back money held for one of our bookings by an intent no attempt knows: an authorization
// that took effect although its gateway call failed (a 5xx after the fact), whose attempt was given up. No sale
// can use it, since sales name their attempt; left alone it would hold the fan's money until it lapsed.
func (p *Checkout) reclaimOrphan(ctx context.Context, ev payment.Event) {
	bookingID := ev.Metadata[payment.MetaBooking]
	if !ValidID(bookingID) {
		return
	}
	if _, err := p.holds.store.Booking(ctx, bookingID); err != nil {
		p.log.InfoContext(ctx, "webhook for a payment not ours", "event", ev.ID, "intent", ev.IntentID)
		return
	}
	sctx, cancel := p.sagaContext(ctx)
	defer cancel()
	in, err := p.gw.Retrieve(sctx, ev.IntentID)
	if err != nil {
		p.log.WarnContext(ctx, "webhook: retrieve orphan", "intent", ev.IntentID, "err", err)
		return
	}
	key := func(op payment.Op) string { return payment.Key(bookingID, "orphan-"+in.ID, op) }
	switch {
	case in.Authorized():
		_, err = p.gw.Void(sctx, in.ID, key(payment.OpVoid))
	case in.Captured():
		_, err = p.gw.Refund(sctx, payment.RefundParams{IntentID: in.ID, Reason: "duplicate", IdempotencyKey: key(payment.OpRefund)})
	default:
		return
	}
	p.log.WarnContext(ctx, "webhook: gave back money of an unknown attempt", "booking", bookingID, "intent", in.ID,
		"status", in.Status, "err", err)
}
