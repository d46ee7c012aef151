// Package stripe is a payment.Gateway speaking Stripe's HTTP API directly: form-encoded POSTs to
// /v1/payment_intents and /v1/refunds, an Idempotency-Key on every state-changing call, the secret key as a bearer
// token. It uses no Stripe SDK: the subset booking needs is five endpoints, and owning the error translation is
// the point of an adapter. The same client talks to the bundled simulator (payment/sim) under `make run`.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// DefaultBaseURL is Stripe's API.
const DefaultBaseURL = "https://api.stripe.com"

// APIVersion pins the Stripe API version whose object shapes this adapter reads.
const APIVersion = "2024-06-20"

// maxBody bounds how much of an answer is read; Stripe objects are a few kilobytes.
const maxBody = 1 << 20

// Config configures a Client.
type Config struct {
	BaseURL   string        // default DefaultBaseURL
	SecretKey string        // sk_test_... or sk_live_...
	Timeout   time.Duration // per call; past it the outcome is unknown (payment.ErrTimeout). Default 10s.
	// HTTPClient defaults to a client with Timeout; a given client's own timeout is left alone.
	HTTPClient *http.Client
}

// Client is a payment.Gateway over Stripe's HTTP API.
type Client struct {
	base    string
	key     string
	timeout time.Duration
	hc      *http.Client
}

// New returns a client. It reports an error for a missing key or an unusable base URL.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("stripe: base URL %q must be an http(s) URL", cfg.BaseURL)
	}
	if cfg.SecretKey == "" {
		return nil, errors.New("stripe: secret key is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	return &Client{base: strings.TrimRight(cfg.BaseURL, "/"), key: cfg.SecretKey, timeout: cfg.Timeout, hc: hc}, nil
}

var _ payment.Gateway = (*Client)(nil)

// Authorize implements payment.Gateway: one create-and-confirm call with capture_method=manual. An intent that
// requires_action (3-D Secure) is returned without an error, its NextActionURL set: the caller sends the fan there.
func (c *Client) Authorize(ctx context.Context, p payment.AuthorizeParams) (payment.Intent, error) {
	if err := p.Validate(); err != nil {
		return payment.Intent{}, err
	}
	form := url.Values{
		"amount":         {strconv.FormatInt(p.Amount, 10)},
		"currency":       {strings.ToLower(p.Currency)},
		"payment_method": {p.PaymentMethod},
		"capture_method": {"manual"},
		"confirm":        {"true"},
		// Cards only: no redirect-based methods, so confirm either authorizes or fails on the spot.
		"payment_method_types[]":                {"card"},
		"metadata[" + payment.MetaBooking + "]": {p.BookingID},
		"metadata[" + payment.MetaAttempt + "]": {p.AttemptID},
	}
	if p.Description != "" {
		form.Set("description", p.Description)
	}
	if p.ReturnURL != "" {
		// With a return_url, a card that needs 3-D Secure answers next_action.redirect_to_url (a page the fan's
		// browser can be sent to) rather than use_stripe_sdk (which only Stripe.js can drive).
		form.Set("return_url", p.ReturnURL)
	}
	var o payment.WireObject
	if err := c.do(ctx, http.MethodPost, "/v1/payment_intents", form, p.Key(), &o); err != nil {
		return declinedIntent(err), err
	}
	in := o.Intent()
	switch in.Status {
	case payment.StatusRequiresCapture, payment.StatusSucceeded, payment.StatusProcessing:
		return in, nil
	case payment.StatusRequiresAction:
		// 3-D Secure: not a decline. Nothing is reserved until the fan passes the challenge at NextActionURL; the
		// outcome arrives by webhook or by Retrieve. Without a redirect URL (no return_url was sent) there is
		// nowhere to send the fan, and the attempt cannot go on.
		if in.NextActionURL == "" {
			return in, &payment.Error{Kind: payment.ErrDeclined, Code: string(in.Status),
				Message: "the card requires an authentication step without a redirect URL"}
		}
		return in, nil
	default:
		// requires_payment_method: nothing is reserved, as with a decline.
		return in, &payment.Error{Kind: payment.ErrDeclined, Code: string(in.Status), Message: in.LastError}
	}
}

// declinedIntent returns the intent a decline answer carries, if any.
func declinedIntent(err error) payment.Intent {
	var e *apiError
	if errors.As(err, &e) && e.intent != nil {
		return e.intent.Intent()
	}
	return payment.Intent{}
}

// Capture implements payment.Gateway.
func (c *Client) Capture(ctx context.Context, intentID, key string) (payment.Intent, error) {
	return c.transition(ctx, intentID, "capture", key, payment.StatusSucceeded)
}

// Void implements payment.Gateway.
func (c *Client) Void(ctx context.Context, intentID, key string) (payment.Intent, error) {
	return c.transition(ctx, intentID, "cancel", key, payment.StatusCanceled)
}

// transition posts a capture or cancel. When the gateway says the intent is in the wrong state, the intent is
// read back: if it already is where we wanted it (a repeat after a lost answer, under another key), that is
// success, so callers can retry these calls blindly.
func (c *Client) transition(ctx context.Context, intentID, action, key string, want payment.Status) (payment.Intent, error) {
	if err := checkID(intentID); err != nil {
		return payment.Intent{}, err
	}
	var o payment.WireObject
	err := c.do(ctx, http.MethodPost, "/v1/payment_intents/"+intentID+"/"+action, url.Values{}, key, &o)
	if errors.Is(err, payment.ErrState) {
		if in, rerr := c.Retrieve(ctx, intentID); rerr == nil && in.Status == want {
			return in, nil
		}
	}
	if err != nil {
		return payment.Intent{}, err
	}
	return o.Intent(), nil
}

// Refund implements payment.Gateway.
func (c *Client) Refund(ctx context.Context, p payment.RefundParams) (payment.Refund, error) {
	if err := checkID(p.IntentID); err != nil {
		return payment.Refund{}, err
	}
	form := url.Values{"payment_intent": {p.IntentID}}
	if p.Amount > 0 {
		form.Set("amount", strconv.FormatInt(p.Amount, 10))
	}
	if p.Reason != "" {
		form.Set("reason", p.Reason)
	}
	var o payment.WireObject
	if err := c.do(ctx, http.MethodPost, "/v1/refunds", form, p.IdempotencyKey, &o); err != nil {
		return payment.Refund{}, err
	}
	return o.Refund(), nil
}

// Retrieve implements payment.Gateway.
func (c *Client) Retrieve(ctx context.Context, intentID string) (payment.Intent, error) {
	if err := checkID(intentID); err != nil {
		return payment.Intent{}, err
	}
	var o payment.WireObject
	if err := c.do(ctx, http.MethodGet, "/v1/payment_intents/"+intentID, nil, "", &o); err != nil {
		return payment.Intent{}, err
	}
	return o.Intent(), nil
}

// checkID keeps ids that would change the request path out of it.
func checkID(id string) error {
	if id == "" || strings.ContainsAny(id, "/?#%. \t\r\n") {
		return fmt.Errorf("%w: intent id %q", payment.ErrInvalid, id)
	}
	return nil
}

// apiError carries the declined intent beside the payment.Error the caller sees.
type apiError struct {
	err    *payment.Error
	intent *payment.WireObject
}

func (e *apiError) Error() string { return e.err.Error() }
func (e *apiError) Unwrap() error { return e.err }

func (c *Client) do(ctx context.Context, method, path string, form url.Values, idemKey string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%w: %v", payment.ErrInvalid, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Stripe-Version", APIVersion)
	req.Header.Set("Accept", "application/json")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return transportError(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			// The call succeeded but its answer is unreadable: the outcome is as unknown as after a timeout.
			return &payment.Error{Kind: payment.ErrTimeout, HTTPStatus: resp.StatusCode, Message: "unreadable answer: " + err.Error()}
		}
		return nil
	}
	return statusError(resp, b)
}

// transportError classifies a failed round trip. Only a refused connection is known not to have reached the
// gateway; anything else (timeout, reset mid-answer) may have taken effect, so the outcome is unknown.
func transportError(ctx context.Context, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && ctx.Err() == nil {
		return &payment.Error{Kind: payment.ErrUnavailable, Message: err.Error()}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%w: %w", payment.ErrTimeout, context.Canceled)
	}
	return &payment.Error{Kind: payment.ErrTimeout, Message: err.Error()}
}

func statusError(resp *http.Response, body []byte) error {
	var w struct {
		Error payment.WireError `json:"error"`
	}
	_ = json.Unmarshal(body, &w) // an unreadable error body still has a status code
	e := &payment.Error{HTTPStatus: resp.StatusCode, Type: w.Error.Type, Code: w.Error.Code,
		DeclineCode: w.Error.DeclineCode, Message: w.Error.Message}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	switch {
	case resp.StatusCode == http.StatusPaymentRequired || w.Error.Type == "card_error":
		e.Kind = payment.ErrDeclined
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		e.Kind = payment.ErrAuth
	case resp.StatusCode == http.StatusConflict:
		e.Kind = payment.ErrInProgress
	case w.Error.Type == "idempotency_error":
		e.Kind = payment.ErrIdempotencyMismatch
	case resp.StatusCode == http.StatusNotFound || w.Error.Code == "resource_missing":
		e.Kind = payment.ErrNotFound
	case w.Error.Code == "payment_intent_unexpected_state" || w.Error.Code == "charge_already_refunded" ||
		w.Error.Code == "charge_already_captured":
		e.Kind = payment.ErrState
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		e.Kind = payment.ErrUnavailable
	default:
		e.Kind = payment.ErrInvalid
	}
	return &apiError{err: e, intent: w.Error.PaymentIntent}
}
