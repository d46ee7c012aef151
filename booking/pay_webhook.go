package booking

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashseat/flashseat/booking/payment"
)

// Webhook handles one signed event from the gateway. Events are deduplicated by id. The saga and the worker never
// need them (they ask the gateway themselves); an event only makes things happen sooner, and catches money that
// arrived where no booking wants it: a success for an attempt whose booking expired or was cancelled is given back.
func (p *Payments) Webhook(ctx context.Context, body []byte, signature string) error {
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
	if ev.Type != payment.EventAuthorized && ev.Type != payment.EventSucceeded {
		return nil
	}
	a, err := p.store.AttemptByIntent(ctx, ev.IntentID)
	if errors.Is(err, ErrNotFound) && ev.Metadata[payment.MetaAttempt] != "" && ValidID(ev.Metadata[payment.MetaAttempt]) {
		// An authorization we timed out on: the attempt does not know its intent yet.
		a, err = p.store.Attempt(ctx, ev.Metadata[payment.MetaAttempt])
	}
	if errors.Is(err, ErrNotFound) {
		p.log.InfoContext(ctx, "webhook for an unknown payment", "event", ev.ID, "intent", ev.IntentID)
		return nil
	}
	if err != nil {
		return err
	}
	switch a.State {
	case AttemptPending:
		// The answer is in: let the worker fetch it now rather than at the next retry.
		p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptPending}, To: AttemptPending, Lease: p.cfg.Now()})
		p.nudge()
	case AttemptDeclined, AttemptRejected, AttemptVoided:
		// We believed no money was held for this attempt, yet the gateway says otherwise.
		p.reclaim(ctx, a, ev.IntentID)
	}
	return nil
}

// reclaim gives back money the gateway holds for an attempt that ended without a sale.
func (p *Payments) reclaim(ctx context.Context, a Attempt, intentID string) {
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
		p.settle(sctx, a)
	}
}
