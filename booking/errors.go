package booking

import (
	"errors"
	"fmt"
	"strings"
)

// Errors the domain returns, each a kind: every error the domain hands out wraps exactly one of them (with %w, or
// as ConflictError and QueueError do), callers compare with errors.Is, and the HTTP layer's one table
// (booking/http/errors.go) maps each kind to a status and a problem type. A new kind needs a row there; a test
// fails until it has one.
var (
	ErrNotFound         = errors.New("not found")
	ErrInvalid          = errors.New("invalid input")             // malformed request
	ErrValidation       = errors.New("validation failed")         // well-formed but unacceptable
	ErrSeatsUnavailable = errors.New("seats unavailable")         // someone else holds or bought them
	ErrSaleNotOpen      = errors.New("sale not open")             // before saleStartsAt or after the show started
	ErrSaleClosed       = errors.New("sale closed")               // an operator closed the show's sale
	ErrTooManySeats     = errors.New("too many seats")            // over MAX_SEATS_PER_BOOKING, per booking or per user
	ErrNotHeld          = errors.New("booking is not held")       // the operation needs a HELD booking
	ErrHoldExpired      = errors.New("hold expired")              // the hold lapsed or its locks were lost
	ErrIdempotency      = errors.New("idempotency key reused")    // same key, different request
	ErrInProgress       = errors.New("request already in flight") // same key, first request not finished
	ErrUnauthorized     = errors.New("unauthorized")              // no or invalid credentials
	ErrForbidden        = errors.New("forbidden")                 // valid credentials, not allowed
	ErrQueueRequired    = errors.New("admission required")        // the show's queue is on and no valid admission
	ErrStale            = errors.New("fencing token superseded")  // a newer hold has claimed one of the seats
	ErrTooManyStreams   = errors.New("too many open streams")     // an identity's or prefix's seat streams at their cap
)

// Errors of payments, refunds and check-in.
var (
	ErrPaymentDeclined  = errors.New("payment declined")          // 402: the booking stays HELD
	ErrPaymentFailed    = errors.New("payment gateway failed")    // 502/503: nothing was reserved
	ErrNotConfirmed     = errors.New("booking is not confirmed")  // refund of a booking that was never paid
	ErrRefundWindow     = errors.New("refund window closed")      // too close to the show
	ErrTicketInvalid    = errors.New("ticket code invalid")       // forged, tampered, unknown key
	ErrAlreadyCheckedIn = errors.New("ticket already checked in") // second scan
	ErrTicketVoid       = errors.New("ticket void")               // its booking was refunded
	ErrWebhook          = errors.New("webhook rejected")          // bad signature or body
	ErrSeatNotPaid      = errors.New("seat not paid")             // refund of a seat refunded already
	ErrTransferred      = errors.New("ticket transferred")        // the ticket went to another fan
	ErrTransferClosed   = errors.New("transfers closed")          // off for the show, past its cut-off, or spent
)

// Errors of the exchange (resale.go).
var (
	ErrResaleClosed  = errors.New("resale closed")            // off for the show, or the show has started
	ErrPriceAboveCap = errors.New("price above the cap")      // more than the show's maxPriceRatio of face value
	ErrTicketListed  = errors.New("ticket listed for resale") // withdraw the listing first
	ErrResold        = errors.New("ticket resold")            // sold on the exchange: the buyer's ticket admits
)

// Errors of rotating codes at the door (gate.go).
var (
	ErrCodeExpired   = errors.New("code expired")                 // a rotating code older than 30 s: a screenshot
	ErrRotatingCodes = errors.New("the show uses rotating codes") // its static code, PDF and pass are refused
	ErrStaticCodes   = errors.New("the show uses static codes")   // it has no rotating code to give
)

// ErrNotSoldOut refuses a waitlist entry for a show that still has seats on sale: the fan should book them.
var ErrNotSoldOut = errors.New("show not sold out")

// ConflictError is ErrSeatsUnavailable with the seats that were taken and nearby seats that were free when the
// hold failed.
type ConflictError struct {
	Unavailable  []string
	Alternatives []string
}

func (e *ConflictError) Error() string {
	return "seats unavailable: " + strings.Join(e.Unavailable, ",")
}

// Unwrap makes errors.Is(err, ErrSeatsUnavailable) hold.
func (e *ConflictError) Unwrap() error { return ErrSeatsUnavailable }

// refusal is a ConflictError and room for the seats it names, in one allocation: a flash crowd's answer is nearly
// always one, for a seat or two.
type refusal struct {
	ConflictError
	seats [4]string
}

// newRefusal returns a ConflictError naming a copy of unavailable (which may be the caller's scratch buffer).
func newRefusal(unavailable, alternatives []string) *ConflictError {
	r := new(refusal)
	r.Unavailable = append(r.seats[:0:len(r.seats)], unavailable...)
	r.Alternatives = alternatives
	return &r.ConflictError
}

// QueueError is ErrQueueRequired with where the fan should queue.
type QueueError struct {
	ShowID string
	Cause  error
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("admission required for show %s: %v", e.ShowID, e.Cause)
}

// Unwrap makes errors.Is(err, ErrQueueRequired) hold.
func (e *QueueError) Unwrap() []error { return []error{ErrQueueRequired, e.Cause} }

// QueueURL is the waiting room of the show.
func (e *QueueError) QueueURL() string { return "/queue/" + e.ShowID }

// Invalid returns an error wrapping ErrInvalid with a message for the client.
func Invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Unprocessable returns an error wrapping ErrValidation with a message for the client.
func Unprocessable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrValidation, fmt.Sprintf(format, a...))
}
