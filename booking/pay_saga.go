package booking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/ticket"
)

// PayConfig tunes Payments.
type PayConfig struct {
	// GatewayTimeout is how long the gateway client waits for an answer (its own setting, repeated here because
	// leases are derived from it). Default 5s.
	GatewayTimeout time.Duration
	// HoldMargin is the least time a hold is given before the gateway is asked, so it cannot lapse while the
	// gateway thinks. Default 2m.
	HoldMargin time.Duration
	// RefundWindow: refunds are accepted until this long before the show starts. Default 48h.
	RefundWindow time.Duration
	// RecoverEvery is the recovery worker's period. Default 2s.
	RecoverEvery time.Duration
	// PendingRetry is how soon the worker asks the gateway again about an attempt whose outcome is unknown.
	// Default 1s.
	PendingRetry time.Duration
	// Lease is how long the owner of an attempt may act on it before the recovery worker may take it over: the
	// time a saga may take between two of its writes. Default 2×GatewayTimeout + 5s.
	Lease time.Duration
	// ActionWindow is how long a fan has to pass a 3-D Secure challenge: the hold is extended to last at least
	// this long when the card asks for one, and past it the worker cancels the intent and the booking is HELD
	// again. Default 5m.
	ActionWindow time.Duration
	// ActionRetry is how often the worker asks the gateway about a pending challenge when no webhook has said it
	// was answered. Default 5s.
	ActionRetry time.Duration
	// GiveUpAfter bounds how long an attempt may stay without an answer from the gateway (timeouts, 5xx) before
	// the worker stops asking and lets the booking's hold run its course; a later success is caught by the
	// webhook and given back. Default 15m.
	GiveUpAfter time.Duration
	// ReplayWait is how long a replay of a key waits for the first request's outcome before answering "in
	// progress". Default GatewayTimeout + 2s.
	ReplayWait time.Duration
	// WebhookSecret verifies the gateway's webhooks; WebhookTolerance bounds their age (default 5m).
	WebhookSecret    string
	WebhookTolerance time.Duration
	Now              func() time.Time
	Logger           *slog.Logger
	// OnOutcome is told every pay outcome (metrics); nil is fine.
	OnOutcome func(Outcome)
	// Publish relays the outbox's lifecycle events (the worker calls it); nil leaves them in the outbox.
	Publish func(ctx context.Context, e OutboxEvent) error
}

// Payments is the pay saga, its recovery worker, refunds, tickets and check-in, on top of the Service's holds.
type Payments struct {
	svc      *Service
	store    PaymentStore
	gw       payment.Gateway
	signer   *ticket.Signer
	verifier *ticket.Verifier
	cfg      PayConfig
	log      *slog.Logger

	// life bounds every saga: a request's own context is not used past the first read, so a fan who hangs up
	// does not abandon money half-moved; stopping the process (Close) does, and the worker finishes the job.
	life  context.Context
	close context.CancelFunc
	kick  chan struct{}
	wg    sync.WaitGroup
}

// NewPayments returns Payments over svc's holds.
func NewPayments(svc *Service, store PaymentStore, gw payment.Gateway, signer *ticket.Signer, verifier *ticket.Verifier, cfg PayConfig) *Payments {
	if cfg.GatewayTimeout <= 0 {
		cfg.GatewayTimeout = 5 * time.Second
	}
	if cfg.HoldMargin <= 0 {
		cfg.HoldMargin = 2 * time.Minute
	}
	if cfg.RefundWindow <= 0 {
		cfg.RefundWindow = 48 * time.Hour
	}
	if cfg.RecoverEvery <= 0 {
		cfg.RecoverEvery = 2 * time.Second
	}
	if cfg.PendingRetry <= 0 {
		cfg.PendingRetry = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2*cfg.GatewayTimeout + 5*time.Second
	}
	if cfg.ActionWindow <= 0 {
		cfg.ActionWindow = 5 * time.Minute
	}
	if cfg.ActionRetry <= 0 {
		cfg.ActionRetry = 5 * time.Second
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = 15 * time.Minute
	}
	if cfg.ReplayWait <= 0 {
		cfg.ReplayWait = cfg.GatewayTimeout + 2*time.Second
	}
	if cfg.Now == nil {
		cfg.Now = svc.cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = svc.log
	}
	life, cancel := context.WithCancel(context.Background())
	return &Payments{svc: svc, store: store, gw: gw, signer: signer, verifier: verifier, cfg: cfg, log: cfg.Logger,
		life: life, close: cancel, kick: make(chan struct{}, 1)}
}

// Close stops Payments gracefully: sagas and captures in flight get up to GatewayTimeout to finish, then are cut
// where they stand, for the next process's recovery worker to finish.
func (p *Payments) Close() {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	t := time.NewTimer(p.cfg.GatewayTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	p.Kill()
}

// Kill stops every saga in flight where it stands, as a crash would, and waits for them to return.
func (p *Payments) Kill() {
	p.close()
	p.wg.Wait()
}

// Wait waits for the sagas in flight and their background captures to finish, without stopping them.
func (p *Payments) Wait() { p.wg.Wait() }

func (p *Payments) lease() time.Duration { return p.cfg.Lease }

// PayRequest is POST /pay.
type PayRequest struct {
	BookingID      string
	UserID         string
	PaymentMethod  string
	IdempotencyKey string
	AdmissionToken string
	// ReturnURL is the absolute URL the gateway sends the fan back to after a 3-D Secure challenge; the HTTP
	// layer builds it from a same-site path.
	ReturnURL string
}

// PayResult is a pay's answer: the confirmed booking with its tickets, or Pending when the gateway has not
// answered in time or waits for the fan to pass a 3-D Secure challenge at NextActionURL. AttemptID names the
// payment attempt. Replayed says it was the answer to an earlier request with the same key.
type PayResult struct {
	Booking       Booking
	Pending       bool
	NextActionURL string
	AttemptID     string
	Replayed      bool
}

func (r PayRequest) hash() string {
	h := sha256.Sum256([]byte(r.BookingID + "\x00" + r.PaymentMethod))
	return hex.EncodeToString(h[:])
}

func validatePay(r PayRequest) error {
	switch {
	case r.IdempotencyKey == "":
		return Invalid("the Idempotency-Key header is required")
	case len(r.IdempotencyKey) > 255:
		return Invalid("Idempotency-Key is longer than 255 characters")
	case strings.IndexFunc(r.IdempotencyKey, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0:
		return Invalid("Idempotency-Key must be printable ASCII")
	case r.PaymentMethod == "":
		return Unprocessable("paymentMethod is required")
	case len(r.PaymentMethod) > 100:
		return Unprocessable("paymentMethod is too long")
	case cardNumberLike(r.PaymentMethod):
		// A card number must never be stored, logged or echoed here: refuse it without repeating it.
		return Unprocessable("paymentMethod looks like a card number: send the card to the payment gateway's " +
			"tokenization and pay with the payment method id it returns")
	}
	for _, c := range r.PaymentMethod {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return Unprocessable("paymentMethod %q is not a payment method id", clip(r.PaymentMethod))
		}
	}
	return nil
}

// cardNumberLike reports whether s, once spaces and dashes are gone, is 12 to 19 digits: what a card number
// (a PAN) looks like, and no gateway's payment method id does.
func cardNumberLike(s string) bool {
	n := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			n++
		case c == ' ' || c == '-':
		default:
			return false
		}
	}
	return n >= 12 && n <= 19
}

// Pay runs the saga of one payment:
//
//  1. the booking must be HELD by the caller with its locks still carrying its fencing token; the locks are
//     extended so the hold cannot lapse while the gateway thinks;
//  2. the attempt is recorded under the fan's Idempotency-Key (one per user and key; one with money in flight per
//     booking) and the card authorized under a key derived from the attempt;
//  3. declined: the booking stays HELD; no answer in time: PAYMENT_PENDING, which the recovery worker resolves;
//  4. authorized: one transaction writes the sale (seats, CONFIRMED, payment, tickets, outbox), the Redis locks
//     become sold seats, and the money is captured off the fan's path (the worker retries a failed capture);
//  5. hold lost or superseded, or the seats sold by the ledger's backstop: the authorization is voided and the
//     booking EXPIRED.
//
// A replay of the key returns the first outcome, waiting for it while the first request runs.
func (p *Payments) Pay(ctx context.Context, r PayRequest) (PayResult, error) {
	if err := validatePay(r); err != nil {
		return PayResult{}, err
	}
	b, err := p.svc.Booking(ctx, r.BookingID, r.UserID)
	if err != nil {
		return PayResult{}, err
	}
	hash := r.hash()
	if prev, err := p.store.AttemptByKey(ctx, r.UserID, r.IdempotencyKey); err == nil {
		return p.replay(ctx, prev, hash)
	} else if !errors.Is(err, ErrNotFound) {
		return PayResult{}, err
	}
	// The queue is checked for new attempts only: a replay after the booking freed its admission still answers.
	if b.Status == StatusHeld {
		if err := p.svc.AdmitBooking(ctx, b, r.UserID, r.AdmissionToken); err != nil {
			return PayResult{}, err
		}
	}
	a := Attempt{ID: NewID("pa_"), BookingID: b.ID, UserID: r.UserID, IdempotencyKey: r.IdempotencyKey,
		RequestHash: hash, PaymentMethod: r.PaymentMethod, Amount: b.TotalAmount, Currency: b.Currency,
		ReturnURL: r.ReturnURL, LeaseUntil: p.cfg.Now().Add(p.lease())}
	a, created, err := p.store.StartAttempt(ctx, a)
	if err != nil {
		return PayResult{}, err
	}
	if !created {
		return p.replay(ctx, a, hash)
	}
	p.wg.Add(1)
	defer p.wg.Done()
	sctx, cancel := p.sagaContext(ctx)
	defer cancel()
	res, err := p.run(sctx, a)
	if p.cfg.OnOutcome != nil {
		p.cfg.OnOutcome(outcomeOf(res, err))
	}
	return res, err
}

// sagaContext keeps ctx's values (request id for logs) but not its cancellation; Close cancels it instead.
func (p *Payments) sagaContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(p.life, cancel)
	return sctx, func() { stop(); cancel() }
}

// replay answers a request whose key was used before.
func (p *Payments) replay(ctx context.Context, a Attempt, hash string) (PayResult, error) {
	if a.RequestHash != hash {
		return PayResult{}, fmt.Errorf("%w: Idempotency-Key was used with another booking or payment method", ErrIdempotency)
	}
	deadline := time.Now().Add(p.cfg.ReplayWait)
	for a.Outcome == "" {
		if time.Now().After(deadline) {
			return PayResult{}, fmt.Errorf("payment %s: %w", a.ID, ErrInProgress)
		}
		select {
		case <-ctx.Done():
			return PayResult{}, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		var err error
		if a, err = p.store.Attempt(ctx, a.ID); errors.Is(err, ErrNotFound) {
			// The first request's call never took effect and it gave the key up; this request may run it now.
			return PayResult{}, fmt.Errorf("payment attempt was abandoned, retry: %w", ErrInProgress)
		} else if err != nil {
			return PayResult{}, err
		}
	}
	res, err := p.answer(ctx, a)
	res.Replayed = true
	return res, err
}

// answer turns an attempt's recorded outcome into Pay's result.
func (p *Payments) answer(ctx context.Context, a Attempt) (PayResult, error) {
	switch a.Outcome {
	case OutcomeConfirmed:
		b, err := p.BookingView(ctx, a.BookingID, a.UserID)
		return PayResult{Booking: b}, err
	case OutcomePending:
		b, err := p.svc.Booking(ctx, a.BookingID, a.UserID)
		return PayResult{Booking: b, Pending: true, NextActionURL: a.NextActionURL, AttemptID: a.ID}, err
	case OutcomeDeclined:
		return PayResult{}, fmt.Errorf("%w: %s", ErrPaymentDeclined, a.Detail)
	case OutcomeExpired:
		return PayResult{}, fmt.Errorf("booking %s: %w", a.BookingID, ErrHoldExpired)
	case OutcomeConflict:
		return PayResult{}, fmt.Errorf("booking %s: %w", a.BookingID, ErrSeatsUnavailable)
	case OutcomeNotHeld:
		return PayResult{}, fmt.Errorf("booking %s: %w", a.BookingID, ErrNotHeld)
	case OutcomeInvalidMethod:
		return PayResult{}, Unprocessable("%s", a.Detail)
	default:
		return PayResult{}, fmt.Errorf("%w: %s", ErrPaymentFailed, a.Detail)
	}
}

func outcomeOf(res PayResult, err error) Outcome {
	switch {
	case err == nil && res.Pending:
		return OutcomePending
	case err == nil:
		return OutcomeConfirmed
	case errors.Is(err, ErrPaymentDeclined):
		return OutcomeDeclined
	case errors.Is(err, ErrHoldExpired):
		return OutcomeExpired
	case errors.Is(err, ErrSeatsUnavailable):
		return OutcomeConflict
	case errors.Is(err, ErrNotHeld):
		return OutcomeNotHeld
	}
	return OutcomeFailed
}

// run is the live saga of a freshly recorded attempt.
func (p *Payments) run(ctx context.Context, a Attempt) (PayResult, error) {
	b, err := p.svc.CheckHold(ctx, a.BookingID, a.UserID)
	if err == nil {
		keep := max(b.ExpiresAt.Sub(p.cfg.Now()), p.cfg.HoldMargin)
		b, err = p.svc.ExtendHold(ctx, b, keep)
	}
	if err != nil {
		return p.refuse(ctx, a, err)
	}
	in, err := p.gw.Authorize(ctx, p.authorizeParams(a))
	return p.authorized(ctx, a, in, err, &b)
}

func (p *Payments) authorizeParams(a Attempt) payment.AuthorizeParams {
	return payment.AuthorizeParams{Amount: a.Amount, Currency: a.Currency, PaymentMethod: a.PaymentMethod,
		BookingID: a.BookingID, AttemptID: a.ID, Description: "flashseat booking " + a.BookingID, ReturnURL: a.ReturnURL}
}

// refuse ends an attempt that never reached the gateway because the booking cannot be paid.
func (p *Payments) refuse(ctx context.Context, a Attempt, cause error) (PayResult, error) {
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
func (p *Payments) abandon(ctx context.Context, a Attempt) {
	if err := p.store.DeleteAttempt(context.WithoutCancel(ctx), a.ID); err != nil {
		p.log.ErrorContext(ctx, "abandon payment attempt", "attempt", a.ID, "err", err)
	}
}

// update applies u, logging failures: the worker repeats whatever a lost update left undone.
func (p *Payments) update(ctx context.Context, a Attempt, u AttemptUpdate) bool {
	ok, err := p.store.UpdateAttempt(ctx, a.ID, u)
	if err != nil {
		p.log.ErrorContext(ctx, "update payment attempt", "attempt", a.ID, "to", u.To, "err", err)
	}
	return ok
}

// authorized acts on the gateway's answer to an authorization: in the live saga, held is the booking it just
// checked and extended; in recovery it is nil.
func (p *Payments) authorized(ctx context.Context, a Attempt, in payment.Intent, err error, held *Booking) (PayResult, error) {
	open := []AttemptState{AttemptStarted, AttemptPending}
	live := held != nil
	switch {
	case err == nil && (in.Authorized() || in.Captured()):
		return p.complete(ctx, a, in, held)
	case err == nil && in.RequiresAction():
		return p.awaitAction(ctx, a, in, held)
	case err == nil, errors.Is(err, payment.ErrTimeout) && ctx.Err() == nil, errors.Is(err, payment.ErrInProgress):
		return p.pending(ctx, a)
	case ctx.Err() != nil:
		// Stopping: the attempt stays as it is, for the worker of the next process.
		return PayResult{}, fmt.Errorf("payment %s interrupted: %w", a.ID, err)
	case errors.Is(err, payment.ErrDeclined):
		detail := "the card was declined"
		if in.LastError != "" {
			detail = in.LastError
		}
		return p.conclude(ctx, a, AttemptUpdate{From: open, To: AttemptDeclined, Outcome: OutcomeDeclined,
			Detail: detail, IntentID: in.ID}, fmt.Errorf("%w: %s", ErrPaymentDeclined, detail))
	case errors.Is(err, payment.ErrUnavailable) && live:
		// Nothing was reserved (refused connection, open circuit, a 5xx the gateway does not keep under the key):
		// forget the attempt so the fan may retry with the same key. The hold stays.
		p.abandon(ctx, a)
		return PayResult{}, fmt.Errorf("%w: %w", ErrPaymentFailed, err)
	case errors.Is(err, payment.ErrUnavailable):
		return p.pending(ctx, a)
	case errors.Is(err, payment.ErrNotFound), errors.Is(err, payment.ErrInvalid):
		return p.conclude(ctx, a, AttemptUpdate{From: open, To: AttemptRejected, Outcome: OutcomeInvalidMethod,
			Detail: "the payment method was refused: " + a.PaymentMethod},
			Unprocessable("the payment method %q was refused by the gateway", clip(a.PaymentMethod)))
	default:
		p.log.ErrorContext(ctx, "authorize", "attempt", a.ID, "err", err)
		return p.conclude(ctx, a, AttemptUpdate{From: open, To: AttemptRejected, Outcome: OutcomeFailed,
			Detail: "the payment gateway refused the request"}, fmt.Errorf("%w: %w", ErrPaymentFailed, err))
	}
}

// conclude ends an attempt that reserved no money with answer, putting a PAYMENT_PENDING booking back to HELD.
func (p *Payments) conclude(ctx context.Context, a Attempt, u AttemptUpdate, answer error) (PayResult, error) {
	if !p.update(ctx, a, u) {
		return p.current(ctx, a)
	}
	p.unpend(ctx, a)
	return PayResult{}, answer
}

// current answers for an attempt that someone else moved on (the worker after a lease passed, or the saga it
// overtook): their outcome is the answer, and the attempt's money is theirs to handle.
func (p *Payments) current(ctx context.Context, a Attempt) (PayResult, error) {
	cur, err := p.store.Attempt(ctx, a.ID)
	if err != nil {
		return PayResult{}, err
	}
	return p.replay(ctx, cur, cur.RequestHash)
}

// pending records that the gateway's answer is not known yet: the booking shows PAYMENT_PENDING, its seats stay
// held, and the worker asks again after PendingRetry.
func (p *Payments) pending(ctx context.Context, a Attempt) (PayResult, error) {
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptPending,
		Outcome: OutcomePending, Lease: p.cfg.Now().Add(p.cfg.PendingRetry)}) {
		// Resolved meanwhile by someone else: marking the booking PAYMENT_PENDING now could strand it there.
		return p.current(ctx, a)
	}
	b, err := p.store.SetStatus(ctx, a.BookingID, []Status{StatusHeld}, StatusPaymentPending)
	if err != nil {
		if b, err = p.svc.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
	}
	return PayResult{Booking: b, Pending: true, AttemptID: a.ID}, nil
}

// awaitAction records that the card asks for a 3-D Secure challenge: not a decline, and no money yet. The attempt
// stays PENDING with its intent and the challenge's URL, the booking shows PAYMENT_PENDING, and the hold is made
// to last the ActionWindow the fan is given. The outcome arrives by webhook (which nudges the worker) or by the
// worker asking the gateway every ActionRetry; a challenge left unanswered is cancelled after ActionWindow.
func (p *Payments) awaitAction(ctx context.Context, a Attempt, in payment.Intent, held *Booking) (PayResult, error) {
	if in.NextActionURL == "" {
		return p.conclude(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptDeclined,
			Outcome: OutcomeDeclined, Detail: "the card asks for an authentication this checkout cannot perform",
			IntentID: in.ID}, fmt.Errorf("%w: the card asks for an authentication this checkout cannot perform", ErrPaymentDeclined))
	}
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending}, To: AttemptPending,
		Outcome: OutcomePending, IntentID: in.ID, NextActionURL: in.NextActionURL,
		Lease: p.cfg.Now().Add(p.cfg.ActionRetry)}) {
		return p.current(ctx, a)
	}
	if held != nil {
		if keep := p.cfg.ActionWindow; held.ExpiresAt.Sub(p.cfg.Now()) < keep {
			if b, err := p.svc.ExtendHold(ctx, *held, keep); err == nil {
				held = &b
			} else {
				// The webhook or the worker will find the hold gone and give back whatever the challenge authorizes.
				p.log.WarnContext(ctx, "extend hold for 3-D Secure", "booking", a.BookingID, "err", err)
			}
		}
	}
	b, err := p.store.SetStatus(ctx, a.BookingID, []Status{StatusHeld}, StatusPaymentPending)
	if err != nil {
		if b, err = p.svc.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
	}
	return PayResult{Booking: b, Pending: true, NextActionURL: in.NextActionURL, AttemptID: a.ID}, nil
}

// unpend puts a PAYMENT_PENDING booking back to HELD once its attempt ended without money.
func (p *Payments) unpend(ctx context.Context, a Attempt) {
	_, _ = p.store.SetStatus(ctx, a.BookingID, []Status{StatusPaymentPending}, StatusHeld)
}

// complete confirms the booking of an authorized attempt, or gives the money back when the seats are no longer
// the fan's. held, when known, saves reading the booking again: the fields used here never change, and the
// confirmation's transaction checks the status itself.
func (p *Payments) complete(ctx context.Context, a Attempt, in payment.Intent, held *Booking) (PayResult, error) {
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptStarted, AttemptPending, AttemptAuthorized},
		To: AttemptAuthorized, IntentID: in.ID}) {
		// Moved on by someone else (the worker after a lease passed, or the other way round): their answer counts.
		return p.current(ctx, a)
	}
	var b Booking
	if held != nil {
		b = *held
	} else {
		var err error
		if b, err = p.svc.store.Booking(ctx, a.BookingID); err != nil {
			return PayResult{}, err
		}
		switch b.Status {
		case StatusHeld, StatusPaymentPending:
		case StatusExpired:
			return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
		default:
			if p.confirmedBy(ctx, b, a) {
				return p.finished(ctx, a)
			}
			return p.giveBack(ctx, a, in, b, OutcomeNotHeld, ErrNotHeld)
		}
	}
	owned, err := p.svc.locks.Owned(ctx, b)
	if err != nil {
		return PayResult{}, err
	}
	if !owned {
		// Lost locks mean an expired hold, unless the fan cancelled meanwhile (cancel releases them too).
		if cur, err := p.svc.store.Booking(ctx, b.ID); err == nil && cur.Status == StatusCancelled {
			return p.giveBack(ctx, a, in, cur, OutcomeNotHeld, ErrNotHeld)
		}
		return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
	}
	sale := Sale{AttemptID: a.ID, BookingID: b.ID, PaymentID: NewID("pay_"), IntentID: in.ID, Amount: a.Amount,
		Currency: a.Currency}
	for _, seat := range b.SeatIDs {
		id := NewID("tk_")
		code, err := p.signer.Sign(id, b.ShowID, seat)
		if err != nil {
			return PayResult{}, err
		}
		sale.Tickets = append(sale.Tickets, Ticket{ID: id, SeatID: seat, Code: code})
	}
	cb, err := p.store.ConfirmSale(ctx, sale)
	switch {
	case err == nil:
	case errors.Is(err, ErrStale), errors.Is(err, ErrHoldExpired):
		return p.giveBack(ctx, a, in, b, OutcomeExpired, ErrHoldExpired)
	case errors.Is(err, ErrSeatsUnavailable):
		return p.giveBack(ctx, a, in, b, OutcomeConflict, ErrSeatsUnavailable)
	case errors.Is(err, ErrNotHeld):
		if cur, rerr := p.svc.store.Booking(ctx, b.ID); rerr == nil && p.confirmedBy(ctx, cur, a) {
			return p.finished(ctx, a)
		}
		return p.giveBack(ctx, a, in, b, OutcomeNotHeld, ErrNotHeld)
	default:
		// Unknown whether it committed: the attempt stays AUTHORIZED and the worker decides after the lease.
		return PayResult{}, err
	}
	p.svc.Sold(ctx, cb)
	pay := Payment{ID: sale.PaymentID, BookingID: b.ID, AttemptID: a.ID, IntentID: in.ID, Amount: a.Amount}
	if held == nil {
		p.capture(ctx, pay)
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
	}()
	return PayResult{Booking: cb}, nil
}

// confirmedBy reports whether b was confirmed with a's money (a repeat of a confirmation that committed).
func (p *Payments) confirmedBy(ctx context.Context, b Booking, a Attempt) bool {
	if b.Status != StatusConfirmed {
		return false
	}
	pay, err := p.store.PaymentOf(ctx, b.ID)
	return err == nil && pay.AttemptID == a.ID
}

// finished answers for an attempt whose sale committed already.
func (p *Payments) finished(ctx context.Context, a Attempt) (PayResult, error) {
	b, err := p.BookingView(ctx, a.BookingID, a.UserID)
	return PayResult{Booking: b}, err
}

// giveBack voids (or refunds) the money of an attempt whose booking cannot be confirmed, marks a booking that
// lost its hold EXPIRED, and returns cause.
func (p *Payments) giveBack(ctx context.Context, a Attempt, in payment.Intent, b Booking, outcome Outcome, cause error) (PayResult, error) {
	to := AttemptVoiding
	if in.Captured() {
		to = AttemptRefunding
	}
	if !p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptAuthorized}, To: to, Outcome: outcome,
		Lease: p.cfg.Now().Add(p.lease())}) {
		// Someone else (the worker, after our lease passed) moved the attempt on, perhaps to a sale whose locks
		// it has just converted — which is why we found them gone. Its outcome is the answer; the money is its.
		return p.current(ctx, a)
	}
	a.State, a.IntentID = to, in.ID
	p.settle(ctx, a)
	if outcome != OutcomeNotHeld {
		p.expire(ctx, b)
	}
	return PayResult{}, fmt.Errorf("booking %s: %w", a.BookingID, cause)
}

// expire ends a hold whose locks are lost, also from PAYMENT_PENDING, and cleans up as the reconciler would.
func (p *Payments) expire(ctx context.Context, b Booking) {
	eb, err := p.store.SetStatus(ctx, b.ID, []Status{StatusHeld, StatusPaymentPending}, StatusExpired)
	if err != nil {
		return // confirmed, cancelled or expired meanwhile
	}
	p.svc.afterExpiry(ctx, []Booking{eb})
}

// settle gives back the money of a VOIDING or REFUNDING attempt; on failure the worker tries again.
func (p *Payments) settle(ctx context.Context, a Attempt) {
	switch a.State {
	case AttemptVoiding:
		_, err := p.gw.Void(ctx, a.IntentID, payment.Key(a.BookingID, a.ID, payment.OpVoid))
		if errors.Is(err, payment.ErrState) {
			// Captured after all (a capture raced us): the money must be refunded instead.
			if in, rerr := p.gw.Retrieve(ctx, a.IntentID); rerr == nil && in.Captured() &&
				p.update(ctx, a, AttemptUpdate{From: []AttemptState{AttemptVoiding}, To: AttemptRefunding}) {
				a.State = AttemptRefunding
				p.settle(ctx, a)
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
func (p *Payments) capture(ctx context.Context, pay Payment) {
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

// BookingView is the user's booking with its tickets, as GET /bookings/{id} shows it.
func (p *Payments) BookingView(ctx context.Context, id, userID string) (Booking, error) {
	b, err := p.svc.Booking(ctx, id, userID)
	if err != nil {
		return Booking{}, err
	}
	switch b.Status {
	case StatusConfirmed, StatusRefunded:
		if b.Tickets, err = p.store.Tickets(ctx, b.ID); err != nil {
			return Booking{}, err
		}
	case StatusPaymentPending:
		// A fan who left the challenge page (a back button, a closed tab) can go back to it from here.
		as, err := p.store.AttemptsOf(ctx, b.ID)
		if err != nil {
			return Booking{}, err
		}
		for _, a := range as {
			if a.State == AttemptPending && a.NextActionURL != "" {
				b.NextActionURL = a.NextActionURL
			}
		}
	}
	return b, nil
}
