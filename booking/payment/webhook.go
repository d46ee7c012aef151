package payment

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries a webhook's signature, as Stripe names it.
const SignatureHeader = "Stripe-Signature"

// DefaultTolerance is how old a signed webhook may be. It bounds how long a captured request can be replayed;
// deduplication by event id covers replays inside the window.
const DefaultTolerance = 5 * time.Minute

// Webhook verification errors; all wrap ErrSignature.
var (
	ErrSignature    = errors.New("payment: webhook signature invalid")
	ErrNoSignature  = fmt.Errorf("%w: header missing or malformed", ErrSignature)
	ErrSigMismatch  = fmt.Errorf("%w: no matching v1 signature", ErrSignature)
	ErrSigTimestamp = fmt.Errorf("%w: timestamp outside tolerance", ErrSignature)
)

// Sign computes the signature header for payload sent at t: "t=<unix>,v1=<hex HMAC-SHA256 of "t.payload">".
func Sign(payload []byte, secret string, t time.Time) string { return SignAll(payload, t, secret) }

// SignAll is Sign with one v1 entry per secret, in the order given: what a sender rolling its secret sends for a
// while, so that a receiver holding either the old or the new secret verifies it (VerifySignature accepts any).
func SignAll(payload []byte, t time.Time, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=" + hex.EncodeToString(mac(s, ts, payload)))
	}
	return b.String()
}

func mac(secret, ts string, payload []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(payload)
	return h.Sum(nil)
}

// VerifySignature checks header against payload under secret, as Stripe's libraries do: any v1 entry may match
// (several appear while a secret is being rolled), and the timestamp must be within tolerance of now in either
// direction. tolerance 0 means DefaultTolerance.
func VerifySignature(payload []byte, header, secret string, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	want := mac(secret, ts, payload)
	matched := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return ErrSigMismatch
	}
	if age := now.Sub(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
		return ErrSigTimestamp
	}
	return nil
}

// Event types the gateway sends and booking reacts to.
const (
	EventAuthorized = "payment_intent.amount_capturable_updated"
	EventSucceeded  = "payment_intent.succeeded"
	EventCanceled   = "payment_intent.canceled"
	EventFailed     = "payment_intent.payment_failed"
	// EventRequiresAction says the intent waits for the fan's 3-D Secure challenge.
	EventRequiresAction = "payment_intent.requires_action"
	EventRefunded       = "charge.refunded"
)

// Event is a webhook event. Object is the intent for payment_intent.* events; for charge.refunded the charge's
// payment_intent, amount and amount_refunded are mapped onto IntentID, Amount and Refunded.
type Event struct {
	ID       string
	Type     string
	Created  time.Time
	IntentID string
	Intent   Intent // zero for charge events
	Amount   int64
	Refunded int64
	Metadata map[string]string
}

// ParseEvent decodes a Stripe-style event body. It does not check the signature; call VerifySignature first.
func ParseEvent(body []byte) (Event, error) {
	var w struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
		Data    struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return Event{}, fmt.Errorf("%w: event: %v", ErrInvalid, err)
	}
	if !token(w.ID) || !token(w.Type) || len(w.Data.Object) == 0 {
		return Event{}, fmt.Errorf("%w: event without a well-formed id, type or data.object", ErrInvalid)
	}
	ev := Event{ID: w.ID, Type: w.Type, Created: time.Unix(w.Created, 0).UTC()}
	var obj WireObject
	if err := json.Unmarshal(w.Data.Object, &obj); err != nil {
		return Event{}, fmt.Errorf("%w: event object: %v", ErrInvalid, err)
	}
	if (obj.ID != "" && !token(obj.ID)) || (obj.PaymentIntent != "" && !token(obj.PaymentIntent)) {
		return Event{}, fmt.Errorf("%w: event object with a malformed id", ErrInvalid)
	}
	switch obj.Object {
	case "payment_intent":
		ev.Intent = obj.Intent()
		ev.IntentID, ev.Amount, ev.Metadata = obj.ID, obj.Amount, obj.Metadata
	case "charge":
		ev.IntentID, ev.Amount, ev.Refunded, ev.Metadata = obj.PaymentIntent, obj.AmountCaptured, obj.AmountRefunded, obj.Metadata
	default:
		ev.Metadata = obj.Metadata
	}
	return ev, nil
}

// WireObject is the union of the members of Stripe's payment_intent, charge and refund objects that this
// project reads. The stripe adapter decodes responses into it and the simulator encodes them from it, so the two
// cannot drift apart.
type WireObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Status           string            `json:"status,omitempty"`
	Amount           int64             `json:"amount"`
	AmountCapturable int64             `json:"amount_capturable,omitempty"`
	AmountReceived   int64             `json:"amount_received,omitempty"`
	AmountCaptured   int64             `json:"amount_captured,omitempty"`
	AmountRefunded   int64             `json:"amount_refunded,omitempty"`
	Refunded         bool              `json:"refunded,omitempty"`
	Currency         string            `json:"currency,omitempty"`
	CaptureMethod    string            `json:"capture_method,omitempty"`
	PaymentMethod    string            `json:"payment_method,omitempty"`
	PaymentIntent    string            `json:"payment_intent,omitempty"`
	Created          int64             `json:"created,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	LastPaymentError *WireError        `json:"last_payment_error,omitempty"`
	NextAction       *WireNextAction   `json:"next_action,omitempty"`
}

// WireNextAction is a payment_intent's next_action; this project drives only its redirect_to_url form.
type WireNextAction struct {
	Type          string        `json:"type"`
	RedirectToURL *WireRedirect `json:"redirect_to_url,omitempty"`
}

// WireRedirect is next_action.redirect_to_url: where the browser authenticates, and where it comes back to.
type WireRedirect struct {
	URL       string `json:"url"`
	ReturnURL string `json:"return_url,omitempty"`
}

// WireError is Stripe's error object, both inside {"error":...} answers and as last_payment_error.
type WireError struct {
	Type          string      `json:"type"`
	Code          string      `json:"code,omitempty"`
	DeclineCode   string      `json:"decline_code,omitempty"`
	Message       string      `json:"message,omitempty"`
	Param         string      `json:"param,omitempty"`
	PaymentIntent *WireObject `json:"payment_intent,omitempty"`
}

// Intent converts a payment_intent object.
func (o WireObject) Intent() Intent {
	in := Intent{ID: o.ID, Status: Status(o.Status), Amount: o.Amount, AmountCapturable: o.AmountCapturable,
		AmountReceived: o.AmountReceived, Currency: o.Currency, PaymentMethod: o.PaymentMethod, Metadata: o.Metadata}
	if o.NextAction != nil && o.NextAction.RedirectToURL != nil {
		in.NextActionURL = o.NextAction.RedirectToURL.URL
	}
	if o.LastPaymentError != nil {
		in.LastError = o.LastPaymentError.Message
		if in.LastError == "" {
			in.LastError = o.LastPaymentError.Code
		}
	}
	return in
}

// Refund converts a refund object.
func (o WireObject) Refund() Refund {
	return Refund{ID: o.ID, IntentID: o.PaymentIntent, Amount: o.Amount, Currency: o.Currency, Status: o.Status}
}

// token reports whether s looks like a gateway id or event type (evt_1, payment_intent.succeeded): what ids can be
// stored and looked up as they are.
func token(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
