package booking

import (
	"context"
	"time"
)

// Payments, as the pay saga (pay_saga.go), its recovery worker (pay_recover.go), refunds (refund.go), webhooks
// (pay_webhook.go) and check-in (checkin.go) see them. The gateway speaks booking/payment's vocabulary; tickets are
// signed with booking/ticket. Both are technology-free, so the domain may use them.

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

// Refund is a booking's refund.
type Refund struct {
	ID        string
	BookingID string
	PaymentID string
	Amount    int64
	Succeeded bool
}

// TicketStatus is whether a ticket still admits.
type TicketStatus string

// VALID until scanned (CHECKED_IN) or refunded (VOID).
const (
	TicketValid     TicketStatus = "VALID"
	TicketCheckedIn TicketStatus = "CHECKED_IN"
	TicketVoid      TicketStatus = "VOID"
)

// TicketInfo is a ticket with its state.
type TicketInfo struct {
	Ticket
	BookingID   string
	UserID      string
	ShowID      string
	Status      TicketStatus
	CheckedInAt time.Time
}

// PaymentStore is the ledger side of payments; booking/postgres implements it.
type PaymentStore interface {
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

	// ConfirmSale is the one transaction of a sale: the booking CONFIRMED with its seats in the ledger (fencing
	// token checked), its payment, tickets, the attempt CONFIRMED and an outbox event. booking.ErrStale,
	// ErrHoldExpired, ErrSeatsUnavailable, ErrNotHeld as the ledger's confirmation returns them.
	ConfirmSale(ctx context.Context, s Sale) (Booking, error)
	PaymentOf(ctx context.Context, bookingID string) (Payment, error)
	MarkCaptured(ctx context.Context, paymentID string, amount int64) error
	// UncapturedPayments lists payments still AUTHORIZED that were last touched before olderThan.
	UncapturedPayments(ctx context.Context, olderThan time.Time, limit int) ([]Payment, error)

	// RecordRefund is the refund's transaction: a CONFIRMED booking of the user becomes REFUNDED, its seats leave
	// the ledger, its tickets are voided and a PENDING refund and an outbox event are written. A booking already
	// REFUNDED returns its refund again.
	RecordRefund(ctx context.Context, bookingID, userID, refundID string) (Booking, Refund, error)
	RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error
	PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]Refund, error)

	Tickets(ctx context.Context, bookingID string) ([]Ticket, error)
	TicketByID(ctx context.Context, id string) (TicketInfo, error)
	// CheckIn marks a VALID ticket CHECKED_IN, exactly once however many scans race: ErrAlreadyCheckedIn,
	// ErrTicketVoid, ErrNotFound otherwise.
	CheckIn(ctx context.Context, ticketID, showID, seatID, by string, at time.Time) (TicketInfo, error)

	// SeenEvent records a webhook event id; false when it was recorded before.
	SeenEvent(ctx context.Context, id, typ, intentID string) (bool, error)

	// RelayOutbox hands up to limit unpublished lifecycle events, oldest first, to publish and marks those it
	// accepted published, in one transaction that other relays skip: each event is published at least once, and
	// more than once only if the commit after publishing fails.
	RelayOutbox(ctx context.Context, limit int, publish func(OutboxEvent) error) (int, error)
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
