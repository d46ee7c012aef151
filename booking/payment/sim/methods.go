package sim

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// Payment methods: the browser side of the simulator. A checkout page posts the card to POST /v1/payment_methods
// with the publishable key, as Stripe.js does, and gets back a pm_... id; only that id ever reaches booking. The
// simulator keeps the card's outcome and its last four digits under the id, never the number.

// Outcome is what confirming a payment with a card does.
type Outcome int

// The outcomes of the test cards and the old pm_card_* ids.
const (
	Approve       Outcome = iota // authorized at once
	Decline                      // 402 card_declined
	Authenticate                 // requires_action: a 3-D Secure challenge, then authorized or failed
	Slow                         // answers after SlowDelay, then authorized
	ProcessorFail                // 500 api_error, nothing changed
)

// Stripe's public test cards the simulator knows. Any other number that passes the Luhn check is refused, as Stripe
// refuses real cards in test mode, so that nobody is tempted to type one.
var TestCards = map[string]Outcome{
	"4242424242424242": Approve,      // Visa
	"5555555555554444": Approve,      // Mastercard
	"4000000000000002": Decline,      // generic_decline
	"4000000000009995": Decline,      // insufficient_funds
	"4000000000003220": Authenticate, // 3-D Secure 2, always challenged
	"4000000000000259": Slow,         // the simulator's slow card: answers after the gateway timeout
}

// outcomeOfID maps the old test payment method ids (see the package comment) to their outcomes.
var outcomeOfID = map[string]Outcome{
	CardOK: Approve, "pm_card_visa": Approve, "pm_card_mastercard": Approve,
	CardDeclined: Decline, "pm_card_chargeDeclined": Decline,
	CardSlow: Slow, CardError: ProcessorFail,
	Card3DS: Authenticate,
}

// method is a tokenized card.
type method struct {
	obj         methodJSON
	outcome     Outcome
	declineCode string
}

type methodJSON struct {
	ID             string         `json:"id"`
	Object         string         `json:"object"`
	Type           string         `json:"type"`
	Created        int64          `json:"created"`
	Livemode       bool           `json:"livemode"`
	Card           cardJSON       `json:"card"`
	BillingDetails map[string]any `json:"billing_details"`
}

type cardJSON struct {
	Brand    string `json:"brand"`
	Last4    string `json:"last4"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	Funding  string `json:"funding"`
}

// resolve finds what a payment method id does; false for an unknown id.
func (s *Server) resolve(pm string) (Outcome, string, bool) {
	if o, ok := outcomeOfID[pm]; ok {
		return o, "generic_decline", true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.methods[pm]
	if !ok {
		return 0, "", false
	}
	return m.outcome, m.declineCode, true
}

// cors lets any origin's page call the endpoint, as Stripe's API does for publishable-key calls. No credentials
// are involved (the key travels in the Authorization header the page sets), so "*" is enough.
func (s *Server) cors(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "Request-Id")
		h(w, r)
	}
}

// preflight answers the browser's CORS preflight: the Authorization header makes the POST non-simple.
func (s *Server) preflight(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Stripe-Version")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// publishable reports whether the request carries a key allowed to tokenize cards.
func (s *Server) publishable(r *http.Request) bool {
	key := apiKey(r)
	switch {
	case key == "":
		return false
	case strings.HasPrefix(key, "pk_"):
		return s.cfg.PublishableKey == "" || key == s.cfg.PublishableKey
	}
	return s.authorized(r)
}

// createMethod is POST /v1/payment_methods with type=card and card[number], card[exp_month], card[exp_year],
// card[cvc], billing_details[name]. Bad card data is a 402 card_error naming the field, as Stripe answers it.
func (s *Server) createMethod(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, s.publishable, 16<<10) {
		return
	}
	m, status, e := newMethod(r.PostForm, time.Now())
	if e != nil {
		writeError(w, status, *e)
		return
	}
	s.mu.Lock()
	s.methods[m.obj.ID] = m
	s.stats.PaymentMethods++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, m.obj)
}

// newMethod validates a card form and returns the method it makes, or the status and error to answer.
func newMethod(form map[string][]string, now time.Time) (*method, int, *payment.WireError) {
	get := func(k string) string {
		if v := form[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	cardErr := func(code, param, msg string) (*method, int, *payment.WireError) {
		return nil, http.StatusPaymentRequired, &payment.WireError{Type: "card_error", Code: code, Param: param, Message: msg}
	}
	if t := get("type"); t != "card" {
		return nil, http.StatusBadRequest, &payment.WireError{Type: "invalid_request_error", Code: "parameter_invalid",
			Param: "type", Message: "Invalid type: must be card."}
	}
	number := strings.NewReplacer(" ", "", "-", "").Replace(get("card[number]"))
	if number == "" {
		return nil, http.StatusBadRequest, &payment.WireError{Type: "invalid_request_error", Code: "parameter_missing",
			Param: "card[number]", Message: "Missing required param: card[number]."}
	}
	if len(number) < 12 || len(number) > 19 || !digits(number) || !luhn(number) {
		return cardErr("incorrect_number", "card[number]", "Your card number is incorrect.")
	}
	month, err := strconv.Atoi(get("card[exp_month]"))
	if err != nil || month < 1 || month > 12 {
		return cardErr("invalid_expiry_month", "card[exp_month]", "Your card's expiration month is invalid.")
	}
	year, err := strconv.Atoi(get("card[exp_year]"))
	if err == nil && year < 100 {
		year += 2000
	}
	if err != nil || year < now.Year() || year > now.Year()+50 || (year == now.Year() && month < int(now.Month())) {
		return cardErr("invalid_expiry_year", "card[exp_year]", "Your card's expiration year is invalid.")
	}
	if cvc := get("card[cvc]"); cvc != "" && (len(cvc) < 3 || len(cvc) > 4 || !digits(cvc)) {
		return cardErr("invalid_cvc", "card[cvc]", "Your card's security code is invalid.")
	}
	outcome, known := TestCards[number]
	if !known {
		return cardErr("card_declined", "card[number]", "Your card was declined. Your request was in test mode, "+
			"but used a non test card. For a list of valid test cards, see the simulator's documentation.")
	}
	decline := "generic_decline"
	if number == "4000000000009995" {
		decline = "insufficient_funds"
	}
	m := &method{outcome: outcome, declineCode: decline, obj: methodJSON{ID: newID("pm"), Object: "payment_method",
		Type: "card", Created: now.Unix(),
		Card:           cardJSON{Brand: brand(number), Last4: number[len(number)-4:], ExpMonth: month, ExpYear: year, Funding: "credit"},
		BillingDetails: map[string]any{"name": nilIfEmpty(get("billing_details[name]"))}}}
	return m, 0, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// luhn reports whether a card number's check digit is right.
func luhn(number string) bool {
	sum := 0
	for i := range len(number) {
		d := int(number[len(number)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// brand names a card's network from its first digits, with Stripe's names.
func brand(number string) string {
	two, _ := strconv.Atoi(number[:2])
	four, _ := strconv.Atoi(number[:4])
	switch {
	case number[0] == '4':
		return "visa"
	case two >= 51 && two <= 55, four >= 2221 && four <= 2720:
		return "mastercard"
	case two == 34 || two == 37:
		return "amex"
	}
	return "unknown"
}
