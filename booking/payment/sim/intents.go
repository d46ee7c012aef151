package sim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

func invalid(param, msg string) reply {
	return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error", Code: "parameter_invalid",
		Param: param, Message: msg})
}

func missing(id string) reply {
	return fail(http.StatusNotFound, payment.WireError{Type: "invalid_request_error", Code: "resource_missing",
		Param: "intent", Message: "No such payment_intent: '" + id + "'"})
}

func unexpectedState(in *intent, action string) reply {
	return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
		Code: "payment_intent_unexpected_state", Message: fmt.Sprintf(
			"This PaymentIntent could not be %s because it has a status of %s.", action, in.obj.Status)})
}

func (s *Server) create(r *http.Request, form url.Values) reply {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return invalid("amount", "Invalid positive integer")
	}
	currency := strings.ToLower(form.Get("currency"))
	if len(currency) != 3 {
		return invalid("currency", "Invalid currency: "+currency)
	}
	capture := form.Get("capture_method")
	if capture == "" {
		capture = "automatic"
	}
	if capture != "automatic" && capture != "manual" {
		return invalid("capture_method", "Invalid capture_method: "+capture)
	}
	if ru := form.Get("return_url"); ru != "" {
		if u, err := url.Parse(ru); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid("return_url", "Invalid URL: return_url must be an absolute http(s) URL")
		}
	}
	meta := map[string]string{}
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") && len(v) > 0 {
			meta[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	pm := form.Get("payment_method")
	in := &intent{obj: payment.WireObject{ID: newID("pi"), Object: "payment_intent", Amount: amount,
		Currency: currency, CaptureMethod: capture, PaymentMethod: pm, Created: time.Now().Unix(),
		Metadata: meta, Status: string(payment.StatusRequiresPaymentMethod)}}
	if form.Get("confirm") != "true" {
		if pm != "" {
			in.obj.Status = string(payment.StatusRequiresConfirmation)
		}
		s.put(in)
		return ok(in.obj)
	}
	if pm == "" {
		return invalid("payment_method", "You must provide a payment_method to confirm a PaymentIntent.")
	}
	outcome, declineCode, known := s.resolve(pm)
	if !known {
		return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error", Code: "resource_missing",
			Param: "payment_method", Message: "No such PaymentMethod: '" + pm + "'"})
	}
	switch outcome {
	case Approve:
		s.put(in)
		return ok(s.approve(in))
	case Slow:
		in.obj.Status = string(payment.StatusProcessing)
		s.put(in)
		s.sleep(s.cfg.SlowDelay)
		return ok(s.approve(in))
	case Authenticate:
		return ok(s.challenge(r, in, form.Get("return_url")))
	case Decline:
		e := payment.WireError{Type: "card_error", Code: "card_declined", DeclineCode: declineCode,
			Message: "Your card was declined.", Param: "payment_method"}
		if declineCode == "insufficient_funds" {
			e.Message = "Your card has insufficient funds."
		}
		last := e // a copy: the answer's error embeds the intent, whose last_payment_error must not embed it back
		in.obj.LastPaymentError = &last
		s.put(in)
		s.mu.Lock()
		s.stats.Declines++
		snap := in.obj
		s.mu.Unlock()
		s.hooks.send(payment.EventFailed, snap)
		e.PaymentIntent = &snap
		return fail(http.StatusPaymentRequired, e)
	default: // ProcessorFail
		s.mu.Lock()
		s.stats.InjectedErrors++
		s.mu.Unlock()
		return fail(http.StatusInternalServerError, payment.WireError{Type: "api_error",
			Message: "An unexpected error occurred at the simulated processor."})
	}
}

func (s *Server) put(in *intent) {
	s.mu.Lock()
	s.seq++
	in.seq = s.seq
	s.intents[in.obj.ID] = in
	s.mu.Unlock()
}

// approve moves a confirmed intent to requires_capture (or straight to succeeded for automatic capture).
func (s *Server) approve(in *intent) payment.WireObject {
	s.mu.Lock()
	snap, event := s.approveLocked(in)
	s.mu.Unlock()
	s.hooks.send(event, snap)
	return snap
}

// approveLocked is approve's state change, with s.mu held; the caller sends the event once it has let go.
func (s *Server) approveLocked(in *intent) (payment.WireObject, string) {
	s.stats.Authorizations++
	event := payment.EventAuthorized
	if in.obj.CaptureMethod == "manual" {
		in.obj.Status, in.obj.AmountCapturable = string(payment.StatusRequiresCapture), in.obj.Amount
	} else {
		in.obj.Status, in.obj.AmountReceived = string(payment.StatusSucceeded), in.obj.Amount
		in.charge = newID("ch")
		event = payment.EventSucceeded
	}
	return in.obj, event
}

func (s *Server) retrieve(r *http.Request, _ url.Values) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.intents[r.PathValue("id")]
	if !found {
		return missing(r.PathValue("id"))
	}
	return ok(in.obj)
}

// locked finds the intent of the request's path and returns it with s.mu held; a missing intent is answered
// without the lock held.
func (s *Server) locked(r *http.Request) (*intent, *reply) {
	s.mu.Lock()
	in, found := s.intents[r.PathValue("id")]
	if !found {
		s.mu.Unlock()
		rep := missing(r.PathValue("id"))
		return nil, &rep
	}
	return in, nil
}

func (s *Server) capture(r *http.Request, form url.Values) reply {
	in, rep := s.locked(r)
	if rep != nil {
		return *rep
	}
	if in.obj.Status != string(payment.StatusRequiresCapture) {
		defer s.mu.Unlock()
		return unexpectedState(in, "captured")
	}
	amount := in.obj.AmountCapturable
	if v := form.Get("amount_to_capture"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > amount {
			s.mu.Unlock()
			return invalid("amount_to_capture", "amount_to_capture must be positive and at most amount_capturable")
		}
		amount = n
	}
	in.obj.Status, in.obj.AmountCapturable, in.obj.AmountReceived = string(payment.StatusSucceeded), 0, amount
	in.charge = newID("ch")
	s.stats.Captures++
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(payment.EventSucceeded, snap)
	return ok(snap)
}

func (s *Server) cancel(r *http.Request, _ url.Values) reply {
	in, rep := s.locked(r)
	if rep != nil {
		return *rep
	}
	switch payment.Status(in.obj.Status) {
	case payment.StatusRequiresCapture, payment.StatusRequiresPaymentMethod, payment.StatusRequiresConfirmation,
		payment.StatusRequiresAction:
	default:
		defer s.mu.Unlock()
		return unexpectedState(in, "canceled")
	}
	in.obj.Status, in.obj.AmountCapturable = string(payment.StatusCanceled), 0
	s.stats.Voids++
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(payment.EventCanceled, snap)
	return ok(snap)
}

func (s *Server) refund(_ *http.Request, form url.Values) reply {
	id := form.Get("payment_intent")
	if id == "" {
		return invalid("payment_intent", "You must provide a payment_intent or charge to refund.")
	}
	s.mu.Lock()
	in, found := s.intents[id]
	if !found {
		s.mu.Unlock()
		return missing(id)
	}
	if in.obj.Status != string(payment.StatusSucceeded) {
		defer s.mu.Unlock()
		return unexpectedState(in, "refunded")
	}
	left := in.obj.AmountReceived - in.refunded
	if left <= 0 {
		s.mu.Unlock()
		return fail(http.StatusBadRequest, payment.WireError{Type: "invalid_request_error",
			Code: "charge_already_refunded", Message: "Charge " + in.charge + " has already been refunded."})
	}
	amount := left
	if v := form.Get("amount"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > left {
			s.mu.Unlock()
			return invalid("amount", "Refund amount must be positive and at most the amount left to refund")
		}
		amount = n
	}
	in.refunded += amount
	s.stats.Refunds++
	ref := payment.WireObject{ID: newID("re"), Object: "refund", Amount: amount, Currency: in.obj.Currency,
		PaymentIntent: id, Status: "succeeded", Created: time.Now().Unix(), Metadata: in.obj.Metadata}
	charge := payment.WireObject{ID: in.charge, Object: "charge", Amount: in.obj.Amount,
		AmountCaptured: in.obj.AmountReceived, AmountRefunded: in.refunded, Refunded: in.refunded == in.obj.AmountReceived,
		Currency: in.obj.Currency, PaymentIntent: id, Status: "succeeded", Metadata: in.obj.Metadata}
	s.mu.Unlock()
	s.hooks.send(payment.EventRefunded, charge)
	return ok(ref)
}
