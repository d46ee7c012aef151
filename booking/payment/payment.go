// Package payment is booking's view of a card payment gateway, shaped like Stripe's PaymentIntents with manual
// capture: a card is authorized first (money reserved, not taken), captured once the seats are ours, and voided
// when they are not. Every call that changes state carries an idempotency key derived from the booking and the
// payment attempt, so a retry after a timeout can never reserve or take money twice.
//
// The package holds the vocabulary (Intent, Refund, the errors), a circuit breaker that wraps any Gateway, and the
// verification of signed webhooks. Adapters live in subpackages: stripe speaks Stripe's HTTP API, sim is the
// bundled simulator of that API.
package payment

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gateway is a payment provider with PaymentIntent semantics. Implementations translate their wire errors to the
// errors of this package, so callers decide with errors.Is.
type Gateway interface {
	// Authorize creates and confirms an intent with manual capture. A declined card returns the intent (when the
	// provider made one) and an error wrapping ErrDeclined. ErrTimeout means the outcome is unknown: repeating the
	// call with the same idempotency key returns the first outcome once the provider has one.
	Authorize(ctx context.Context, p AuthorizeParams) (Intent, error)
	// Capture takes the authorized amount. Capturing an intent already captured succeeds.
	Capture(ctx context.Context, intentID, idempotencyKey string) (Intent, error)
	// Void cancels an uncaptured intent, releasing the reserved money. Voiding an intent already canceled succeeds.
	Void(ctx context.Context, intentID, idempotencyKey string) (Intent, error)
	// Refund returns captured money; Amount 0 refunds whatever remains.
	Refund(ctx context.Context, p RefundParams) (Refund, error)
	// Retrieve reads an intent's current state.
	Retrieve(ctx context.Context, intentID string) (Intent, error)
}

// Status is a PaymentIntent's state, with Stripe's names.
type Status string

// The states an intent passes through. With manual capture a good card goes RequiresCapture (authorized) and then
// Succeeded (captured) or Canceled (voided); a declined card goes back to RequiresPaymentMethod.
const (
	StatusRequiresPaymentMethod Status = "requires_payment_method"
	StatusRequiresConfirmation  Status = "requires_confirmation"
	StatusRequiresAction        Status = "requires_action"
	StatusProcessing            Status = "processing"
	StatusRequiresCapture       Status = "requires_capture"
	StatusCanceled              Status = "canceled"
	StatusSucceeded             Status = "succeeded"
)

// Intent is a PaymentIntent as the gateway reports it. Amounts are in minor units.
type Intent struct {
	ID               string
	Status           Status
	Amount           int64
	AmountCapturable int64
	AmountReceived   int64
	Currency         string
	PaymentMethod    string
	Metadata         map[string]string
	// LastError is the decline or failure message of the last confirmation, if any.
	LastError string
	// NextActionURL is, while the intent requires_action, where the fan's browser must go to authenticate the
	// payment (3-D Secure): Stripe's next_action.redirect_to_url.url.
	NextActionURL string
}

// RequiresAction reports whether the intent waits for the fan to authenticate (3-D Secure). Nothing is reserved
// yet; the outcome arrives once the fan has passed or failed the challenge.
func (i Intent) RequiresAction() bool { return i.Status == StatusRequiresAction }

// Authorized reports whether money is reserved and waiting for capture.
func (i Intent) Authorized() bool { return i.Status == StatusRequiresCapture }

// Captured reports whether the money has been taken.
func (i Intent) Captured() bool { return i.Status == StatusSucceeded }

// Canceled reports whether the intent was voided (or abandoned) without taking money.
func (i Intent) Canceled() bool { return i.Status == StatusCanceled }

// Refund is a refund of captured money.
type Refund struct {
	ID       string
	IntentID string
	Amount   int64
	Currency string
	Status   string // succeeded, pending, failed, canceled (Stripe's values)
}

// AuthorizeParams describe one payment attempt for one booking.
type AuthorizeParams struct {
	Amount        int64
	Currency      string // ISO 4217, any case
	PaymentMethod string
	BookingID     string
	AttemptID     string
	Description   string
	// ReturnURL is the absolute URL the gateway sends the fan's browser back to after a 3-D Secure challenge.
	ReturnURL string
	// IdempotencyKey defaults to Key(BookingID, AttemptID, OpAuthorize).
	IdempotencyKey string
}

// Validate rejects parameters no gateway would accept, before any network call.
func (p AuthorizeParams) Validate() error {
	switch {
	case p.Amount <= 0:
		return fmt.Errorf("%w: amount must be positive", ErrInvalid)
	case len(p.Currency) != 3:
		return fmt.Errorf("%w: currency must be a 3-letter ISO 4217 code", ErrInvalid)
	case p.PaymentMethod == "":
		return fmt.Errorf("%w: payment method is required", ErrInvalid)
	case p.BookingID == "" || p.AttemptID == "":
		return fmt.Errorf("%w: booking and attempt ids are required", ErrInvalid)
	}
	return nil
}

// Key returns the idempotency key; see AuthorizeParams.IdempotencyKey.
func (p AuthorizeParams) Key() string {
	if p.IdempotencyKey != "" {
		return p.IdempotencyKey
	}
	return Key(p.BookingID, p.AttemptID, OpAuthorize)
}

// RefundParams describe a refund of an intent's captured money.
type RefundParams struct {
	IntentID string
	// Amount 0 refunds the whole remaining captured amount.
	Amount int64
	// Reason is one of Stripe's: duplicate, fraudulent, requested_by_customer; empty sends none.
	Reason         string
	IdempotencyKey string
}

// Op names a state-changing gateway call inside an idempotency key.
type Op string

// The operations, one idempotency key each per attempt.
const (
	OpAuthorize Op = "authorize"
	OpCapture   Op = "capture"
	OpVoid      Op = "void"
	OpRefund    Op = "refund"
)

// Key derives the idempotency key of op for one attempt of one booking. Deriving it, rather than drawing a random
// one, is what lets a process that restarts mid-saga repeat a call and get the first outcome back.
func Key(bookingID, attemptID string, op Op) string {
	return "flashseat-" + bookingID + "-" + attemptID + "-" + string(op)
}

// Metadata keys the adapters attach to every intent, so that a webhook or a reconciliation can find its booking.
const (
	MetaBooking = "booking_id"
	MetaAttempt = "attempt_id"
)

// Errors a Gateway returns, wrapped; compare with errors.Is.
var (
	// ErrDeclined: the card was refused. Nothing is reserved; the fan may try another card.
	ErrDeclined = errors.New("payment: declined")
	// ErrTimeout: no answer in time. The call may or may not have taken effect; repeat it with the same
	// idempotency key, or Retrieve, to learn the outcome.
	ErrTimeout = errors.New("payment: timeout, outcome unknown")
	// ErrUnavailable: the gateway failed (5xx, refused connection, rate limited) or the circuit breaker is open.
	// A refused connection never took effect; a 5xx might have, so repeat with the same idempotency key.
	ErrUnavailable = errors.New("payment: gateway unavailable")
	// ErrInProgress: another request with the same idempotency key is still running at the gateway.
	ErrInProgress = errors.New("payment: request with this idempotency key in progress")
	// ErrIdempotencyMismatch: the idempotency key was used before with other parameters.
	ErrIdempotencyMismatch = errors.New("payment: idempotency key reused with other parameters")
	// ErrInvalid: the gateway rejected the request as malformed (a bug on our side or bad input).
	ErrInvalid = errors.New("payment: invalid request")
	// ErrState: the intent is not in a state that allows the call (capture of a canceled intent, refund of an
	// uncaptured one).
	ErrState = errors.New("payment: intent in unexpected state")
	// ErrNotFound: no such intent or payment method.
	ErrNotFound = errors.New("payment: not found")
	// ErrAuth: the gateway refused our credentials; a configuration problem, not the fan's.
	ErrAuth = errors.New("payment: gateway authentication failed")
)

// Error is a gateway's error answer, kept for logs; Kind is one of the sentinel errors above, which Is matches.
type Error struct {
	Kind        error
	HTTPStatus  int
	Type        string // the gateway's error type, e.g. card_error
	Code        string // e.g. card_declined
	DeclineCode string // e.g. insufficient_funds
	Message     string
	RetryAfter  time.Duration // from a Retry-After header, if any
}

func (e *Error) Error() string {
	s := e.Kind.Error()
	if e.HTTPStatus != 0 {
		s += fmt.Sprintf(" (HTTP %d", e.HTTPStatus)
		if e.Code != "" {
			s += " " + e.Code
		}
		if e.DeclineCode != "" {
			s += "/" + e.DeclineCode
		}
		s += ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap lets errors.Is match the Kind.
func (e *Error) Unwrap() error { return e.Kind }

// ServerError reports whether err is the gateway's own answer with a server error (5xx): it was reached and it
// failed the request, as opposed to a timeout, a refused connection or an open circuit, after which nothing was
// heard from it.
func ServerError(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.HTTPStatus >= 500
}

// Failure reports whether err says the gateway is unhealthy (as opposed to the card or the request being bad),
// which is what a circuit breaker counts.
func Failure(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable)
}
