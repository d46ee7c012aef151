package booking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/shard"
)

// AttemptState is where the money of one payment attempt stands.
type AttemptState string

// An attempt starts STARTED (gateway call in flight) and ends DECLINED, REJECTED (no money ever reserved),
// CONFIRMED (the booking's payment), VOIDED or REFUNDED (money given back). PENDING means the gateway did not
// answer in time; AUTHORIZED that money is reserved and the confirmation not yet committed; VOIDING and REFUNDING
// that money must go back and the gateway has not confirmed it yet.
const (
	AttemptStarted    AttemptState = "STARTED"
	AttemptPending    AttemptState = "PENDING"
	AttemptAuthorized AttemptState = "AUTHORIZED"
	AttemptConfirmed  AttemptState = "CONFIRMED"
	AttemptDeclined   AttemptState = "DECLINED"
	AttemptRejected   AttemptState = "REJECTED"
	AttemptVoiding    AttemptState = "VOIDING"
	AttemptVoided     AttemptState = "VOIDED"
	AttemptRefunding  AttemptState = "REFUNDING"
	AttemptRefunded   AttemptState = "REFUNDED"
)

// Outcome is the answer a pay request gets, kept so that a replay of its key gets the same one.
type Outcome string

// The outcomes; each maps to one error (or success) of Pay.
const (
	OutcomeConfirmed     Outcome = "CONFIRMED"
	OutcomePending       Outcome = "PENDING"
	OutcomeDeclined      Outcome = "DECLINED"
	OutcomeExpired       Outcome = "EXPIRED"
	OutcomeConflict      Outcome = "CONFLICT"
	OutcomeNotHeld       Outcome = "NOT_HELD"
	OutcomeInvalidMethod Outcome = "INVALID_METHOD"
	OutcomeFailed        Outcome = "FAILED"
)

// Attempt is one POST /pay with one Idempotency-Key.
type Attempt struct {
	ID             string
	BookingID      string
	UserID         string
	IdempotencyKey string
	RequestHash    string
	PaymentMethod  string
	Amount         int64
	Currency       string
	State          AttemptState
	Outcome        Outcome // empty while the first request runs
	Detail         string
	IntentID       string
	// ReturnURL is where the gateway sends the fan back after a 3-D Secure challenge; kept so that a repeat of
	// the authorization (recovery) sends the same parameters under the same idempotency key.
	ReturnURL string
	// NextActionURL is, while the card's 3-D Secure challenge is pending, where the fan authenticates; a replay of
	// the key sends them there again.
	NextActionURL string
	LeaseUntil    time.Time
	Tries         int
	CreatedAt     time.Time
}

// AttemptUpdate moves an attempt from one of From to To, setting Outcome, Detail, IntentID and NextActionURL when
// not empty and the lease when Lease is not zero; an attempt leaving PENDING loses its NextActionURL. An attempt in none of From is left alone (ErrStale-free: the caller
// learns it from the returned bool).
type AttemptUpdate struct {
	From     []AttemptState
	To       AttemptState
	Outcome  Outcome
	Detail   string
	IntentID string
	// NextActionURL records a pending 3-D Secure challenge.
	NextActionURL string
	Lease         time.Time
}

// Sale is everything the confirmation transaction writes beside the booking's own row and sold seats.
type Sale struct {
	AttemptID string
	BookingID string
	PaymentID string
	IntentID  string
	Amount    int64
	Currency  string
	Tickets   []Ticket
}

// PaymentStatus is where the money of a confirmed booking stands.
type PaymentStatus string

// AUTHORIZED until captured; REFUNDING after a refund was recorded, REFUNDED once the gateway returned it.
const (
	PaymentAuthorized PaymentStatus = "AUTHORIZED"
	PaymentCaptured   PaymentStatus = "CAPTURED"
	PaymentRefunding  PaymentStatus = "REFUNDING"
	PaymentRefunded   PaymentStatus = "REFUNDED"
)

// Payment is the payment of a confirmed booking.
type Payment struct {
	ID             string
	BookingID      string
	AttemptID      string
	IntentID       string
	Amount         int64
	Currency       string
	Status         PaymentStatus
	CapturedAmount int64
	RefundedAmount int64
}

// AttemptStore is the ledger's record of payment attempts, as the saga, its recovery worker and the webhooks
// need it.
type AttemptStore interface {
	// StartAttempt inserts a STARTED attempt. If the user used the key before, it returns that attempt and
	// created false. ErrInProgress when another attempt of the booking still has money in flight.
	StartAttempt(ctx context.Context, a Attempt) (Attempt, bool, error)
	Attempt(ctx context.Context, id string) (Attempt, error)
	// AttemptByKey finds the user's attempt with an Idempotency-Key; ErrNotFound wrapped when there is none.
	AttemptByKey(ctx context.Context, userID, key string) (Attempt, error)
	// AttemptsOf lists a booking's attempts, oldest first.
	AttemptsOf(ctx context.Context, bookingID string) ([]Attempt, error)
	AttemptByIntent(ctx context.Context, intentID string) (Attempt, error)
	// UpdateAttempt applies u if the attempt is in one of u.From; it reports whether it did.
	UpdateAttempt(ctx context.Context, id string, u AttemptUpdate) (bool, error)
	// DeleteAttempt forgets a STARTED attempt whose gateway call never took effect, so its key can run again.
	DeleteAttempt(ctx context.Context, id string) error
	// ClaimAttempts hands the recovery worker up to limit attempts with work left whose lease has passed, leasing
	// each for lease.
	ClaimAttempts(ctx context.Context, lease time.Duration, limit int) ([]Attempt, error)
	// SetStatus moves a booking from one of from to to; ErrNotHeld wrapped when it is in none of them.
	SetStatus(ctx context.Context, id string, from []Status, to Status) (Booking, error)
}

// OutboxEvent is a lifecycle event (booking.confirmed, booking.refunded) written in the transaction that made it
// true.
type OutboxEvent struct {
	ID          int64
	AggregateID string
	Type        string
	Payload     []byte // JSON
	CreatedAt   time.Time
}

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
func (p *Checkout) Pay(ctx context.Context, r PayRequest) (PayResult, error) {
	if err := validatePay(r); err != nil {
		return PayResult{}, err
	}
	b, err := p.holds.Booking(ctx, r.BookingID, r.UserID)
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
		if err := p.holds.AdmitBooking(ctx, b, r.UserID, r.AdmissionToken); err != nil {
			return PayResult{}, err
		}
	}
	a := Attempt{ID: shard.ID("pa_", b.ShowID), BookingID: b.ID, UserID: r.UserID, IdempotencyKey: r.IdempotencyKey,
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
	res, err := p.runSaga(sctx, a)
	if p.cfg.OnOutcome != nil {
		p.cfg.OnOutcome(outcomeOf(res, err))
	}
	if err == nil && len(res.Booking.Tickets) > 0 {
		if perr := p.presentCodes(ctx, res.Booking.ShowID, res.Booking.Tickets); perr != nil {
			// The sale is made: the answer leaves the codes out rather than fail; the booking's page has them.
			for i := range res.Booking.Tickets {
				res.Booking.Tickets[i].Code = ""
			}
		}
	}
	return res, err
}

// replay answers a request whose key was used before.
func (p *Checkout) replay(ctx context.Context, a Attempt, hash string) (PayResult, error) {
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
func (p *Checkout) answer(ctx context.Context, a Attempt) (PayResult, error) {
	switch a.Outcome {
	case OutcomeConfirmed:
		b, err := p.BookingView(ctx, a.BookingID, a.UserID)
		return PayResult{Booking: b}, err
	case OutcomePending:
		b, err := p.holds.Booking(ctx, a.BookingID, a.UserID)
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
