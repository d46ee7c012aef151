// Package problem is the one error format edge, waitroom and booking answer with: RFC 9457 problem details,
// served as application/problem+json. Each service maps its domain errors to a Problem in one place; this package
// only knows how a Problem looks on the wire.
package problem

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// ContentType is the media type of every error answer.
const ContentType = "application/problem+json"

// TypeBase prefixes every problem type; clients match on the slug after the last slash.
const TypeBase = "https://flashseat.dev/problems/"

// Every problem type's slug, named once for the three services (each maps its errors to these in its one error
// table) and for booking's pages, whose api.js names the ones they branch on alike. A problem type is TypeBase + slug.
const (
	BadRequest         = "bad-request"
	Validation         = "validation"
	Unauthorized       = "unauthorized"
	Forbidden          = "forbidden"
	CSRF               = "csrf"
	QueueRequired      = "queue-required"
	NotFound           = "not-found"
	Conflict           = "conflict"
	SeatsUnavailable   = "seats-unavailable"
	Gone               = "gone"
	PaymentDeclined    = "payment-declined"
	PayloadTooLarge    = "payload-too-large"
	HeadersTooLarge    = "headers-too-large"
	UnsupportedMedia   = "unsupported-media-type"
	MethodNotAllowed   = "method-not-allowed"
	RateLimited        = "rate-limited"
	Internal           = "internal"
	BadGateway         = "bad-gateway"
	GatewayTimeout     = "gateway-timeout"
	ServiceUnavailable = "service-unavailable"
	// Booking's own: a sale's state, a key, a refund, a ticket.
	SaleNotOpen          = "sale-not-open"
	SaleClosed           = "sale-closed"
	NotSoldOut           = "not-sold-out"
	IdempotencyKeyReused = "idempotency-key-reused"
	InProgress           = "in-progress"
	RefundWindowClosed   = "refund-window-closed"
	TicketInvalid        = "ticket-invalid"
	AlreadyCheckedIn     = "already-checked-in"
	TicketVoid           = "ticket-void"
	SeatNotPaid          = "seat-not-paid"
	TicketTransferred    = "ticket-transferred"
	TransferClosed       = "transfer-closed"
	// The exchange's: resale off for the show, a price over its cap, a ticket on sale or sold there.
	ResaleClosed  = "resale-closed"
	PriceAboveCap = "price-above-cap"
	TicketListed  = "ticket-listed"
	TicketResold  = "ticket-resold"
	// Rotating codes at the door: a code older than 30 s (a screenshot), a static code, PDF or pass of a show
	// with rotating codes, a rotating code asked of a show with static ones.
	CodeExpired   = "code-expired"
	RotatingCodes = "rotating-codes"
	StaticCodes   = "static-codes"
	// The waiting room's guard refusing a new place has a type per reason, named in waitroom's table of reasons
	// (waitroom/refusal.go).
	// A bypass code presented at join that admits nobody (the fan may still join the line).
	BypassCodeInvalid = "bypass-code-invalid"
	BypassCodeExpired = "bypass-code-expired"
	BypassCodeUsedUp  = "bypass-code-used-up"
	BypassCodeRevoked = "bypass-code-revoked"
	BypassNotNow      = "bypass-not-now"
	// A guest registering for a verified-fan sale without a confirmed contact e-mail.
	ContactRequired = "contact-required"
	// StoreUnavailable is a 503 whose cause is PostgreSQL or Redis being unreachable: the request did nothing and
	// may be sent again after Retry-After. It is also the answer while a show's queue state cannot be read
	// (lost and not rebuilt yet): nothing is decided on a guess, a queued show lets nobody through.
	StoreUnavailable = "store-unavailable"
)

// RetryAfterKey is the extension that carries a problem's Retry-After in seconds; Send puts it in the header too.
const RetryAfterKey = "retryAfterSeconds"

// StoreDown is the problem every service answers while a store it needs cannot be reached: 503, type
// store-unavailable, Retry-After retryAfter seconds (at least one).
func StoreDown(detail string, retryAfter int) *Problem {
	return New(http.StatusServiceUnavailable, StoreUnavailable, detail).WithRetryAfter(retryAfter)
}

// Problem is an RFC 9457 problem details object. Extensions are serialised as top-level members beside the
// standard ones (for example "unavailable", "alternatives", "queueUrl").
type Problem struct {
	Type       string
	Title      string
	Status     int
	Detail     string
	Instance   string
	Extensions map[string]any
}

// New builds a problem of TypeBase+slug. The title defaults to the HTTP status text.
func New(status int, slug, detail string) *Problem {
	return &Problem{Type: TypeBase + slug, Title: http.StatusText(status), Status: status, Detail: detail}
}

// With adds an extension member and returns p for chaining.
func (p *Problem) With(key string, value any) *Problem {
	if p.Extensions == nil {
		p.Extensions = map[string]any{}
	}
	p.Extensions[key] = value
	return p
}

// WithRetryAfter sets the seconds a client should wait before retrying (at least one); Send writes them as the
// Retry-After header.
func (p *Problem) WithRetryAfter(secs int) *Problem {
	return p.With(RetryAfterKey, max(secs, 1))
}

// SetRetryAfter puts p's retryAfterSeconds, if it has one, in the response's Retry-After header: for renderers
// that answer a problem in another form (an HTML page) and must keep the header.
func SetRetryAfter(c *fiber.Ctx, p *Problem) {
	if secs, ok := p.Extensions[RetryAfterKey].(int); ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	}
}

// Error lets a Problem travel as an error up to the service's error handler.
func (p *Problem) Error() string {
	if p.Detail == "" {
		return strconv.Itoa(p.Status) + " " + p.Title
	}
	return strconv.Itoa(p.Status) + " " + p.Title + ": " + p.Detail
}

// MarshalJSON flattens the extensions beside the standard members; a standard member always wins a name clash.
func (p *Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, 5+len(p.Extensions))
	for k, v := range p.Extensions {
		m[k] = v
	}
	m["type"] = p.Type
	m["title"] = p.Title
	m["status"] = p.Status
	if p.Detail != "" {
		m["detail"] = p.Detail
	}
	if p.Instance != "" {
		m["instance"] = p.Instance
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a problem back, keeping unknown members as extensions (used by clients and tests).
func (p *Problem) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = Problem{Extensions: map[string]any{}}
	for k, v := range m {
		switch k {
		case "type":
			p.Type, _ = v.(string)
		case "title":
			p.Title, _ = v.(string)
		case "status":
			f, _ := v.(float64)
			p.Status = int(f)
		case "detail":
			p.Detail, _ = v.(string)
		case "instance":
			p.Instance, _ = v.(string)
		default:
			p.Extensions[k] = v
		}
	}
	return nil
}

// Send writes p as the response.
func Send(c *fiber.Ctx, p *Problem) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	c.Status(p.Status)
	SetRetryAfter(c, p)
	c.Set(fiber.HeaderContentType, ContentType)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(b)
}

// FromFiber turns fiber's own errors (unknown route, wrong method, body too large, bad request) into problems, so
// that even failures that never reach a handler answer in the one format. It reports false for any other error.
func FromFiber(err error) (*Problem, bool) {
	var fe *fiber.Error
	if !errors.As(err, &fe) {
		return nil, false
	}
	slug := BadRequest
	switch fe.Code {
	case fiber.StatusNotFound:
		slug = NotFound
	case fiber.StatusMethodNotAllowed:
		slug = MethodNotAllowed
	case fiber.StatusRequestEntityTooLarge:
		slug = PayloadTooLarge
	case fiber.StatusRequestHeaderFieldsTooLarge:
		slug = HeadersTooLarge
	case fiber.StatusUnsupportedMediaType:
		slug = UnsupportedMedia
	case fiber.StatusUnauthorized:
		slug = Unauthorized
	case fiber.StatusForbidden:
		slug = Forbidden
	case fiber.StatusTooManyRequests:
		slug = RateLimited
	case fiber.StatusServiceUnavailable:
		slug = ServiceUnavailable
	case fiber.StatusGatewayTimeout:
		slug = GatewayTimeout
	case fiber.StatusBadGateway:
		slug = BadGateway
	}
	if fe.Code >= 500 && slug == BadRequest {
		slug = Internal
	}
	return New(fe.Code, slug, fe.Message), true
}
