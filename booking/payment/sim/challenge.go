package sim

import (
	"crypto/subtle"
	_ "embed"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/flashseat/flashseat/booking/payment"
)

// 3-D Secure: a card that requires authentication leaves its intent requires_action with Stripe's
// next_action.redirect_to_url. The fan's browser goes to the simulator's challenge page, whose two buttons stand
// for the bank's app: passing authorizes the intent (requires_capture), failing sends it back to
// requires_payment_method with an authentication error. Either way a webhook tells the merchant, and the browser
// goes back to the return_url given at confirmation, with Stripe's payment_intent and redirect_status appended.

// ChallengePath is where challenge pages live: ChallengePath + intent id, with ?challenge=<secret>.
const ChallengePath = "/3ds/"

//go:embed challenge.html
var challengeHTML string

var challengeTmpl = template.Must(template.New("challenge").Parse(challengeHTML))

// challenge puts a confirmed intent into requires_action and returns it with the challenge page's URL.
func (s *Server) challenge(r *http.Request, in *intent, returnURL string) payment.WireObject {
	in.challenge = newID("chl")
	in.returnURL = returnURL
	base := s.cfg.PublicURL
	if base == "" {
		base = "http://" + r.Host
	}
	page := base + ChallengePath + in.obj.ID + "?challenge=" + url.QueryEscape(in.challenge)
	in.obj.Status = string(payment.StatusRequiresAction)
	in.obj.NextAction = &payment.WireNextAction{Type: "redirect_to_url",
		RedirectToURL: &payment.WireRedirect{URL: page, ReturnURL: returnURL}}
	s.put(in)
	s.mu.Lock()
	snap := in.obj
	s.mu.Unlock()
	s.hooks.send(payment.EventRequiresAction, snap)
	return snap
}

// challengeView is what the page shows.
type challengeView struct {
	IntentID, Challenge string
	Amount, Currency    string
	Pending             bool
	Status              string
	ReturnURL           string
}

// pendingChallenge finds the intent of a challenge request if its secret matches; the lock is not held on return.
func (s *Server) pendingChallenge(r *http.Request, secret string) (*intent, challengeView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.intents[r.PathValue("id")]
	if !found || in.challenge == "" || subtle.ConstantTimeCompare([]byte(in.challenge), []byte(secret)) != 1 {
		return nil, challengeView{}, false
	}
	v := challengeView{IntentID: in.obj.ID, Challenge: in.challenge, Currency: strings.ToUpper(in.obj.Currency),
		Amount: minor(in.obj.Amount), Status: in.obj.Status, ReturnURL: in.returnURL,
		Pending: in.obj.Status == string(payment.StatusRequiresAction)}
	return in, v, true
}

// minor formats an amount in minor units with two decimals (every currency the project sells in has two).
func minor(n int64) string {
	return strconv.FormatInt(n/100, 10) + "." + strconv.FormatInt(100+n%100, 10)[1:]
}

func (s *Server) renderChallenge(w http.ResponseWriter, status int, v challengeView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the page's URL is its secret
	// Chrome applies form-action to the redirect after the form's POST too, so the return URL's origin is allowed.
	action := "'self'"
	if u, err := url.Parse(v.ReturnURL); err == nil && u.Host != "" {
		action += " " + u.Scheme + "://" + u.Host
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action "+action+
		"; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = challengeTmpl.Execute(w, v)
}

// challengePage is GET /3ds/{id}?challenge=...
func (s *Server) challengePage(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.pendingChallenge(r, r.URL.Query().Get("challenge"))
	if !ok {
		s.renderChallenge(w, http.StatusNotFound, challengeView{Status: "unknown"})
		return
	}
	s.renderChallenge(w, http.StatusOK, v)
}

// answerChallenge is the page's form: result=complete or result=fail.
func (s *Server) answerChallenge(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	in, v, ok := s.pendingChallenge(r, r.PostForm.Get("challenge"))
	if !ok {
		s.renderChallenge(w, http.StatusNotFound, challengeView{Status: "unknown"})
		return
	}
	result := r.PostForm.Get("result")
	if result != "complete" && result != "fail" {
		http.Error(w, "result must be complete or fail", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if in.obj.Status != string(payment.StatusRequiresAction) {
		// Answered already (a second tab, a back button) or canceled by the merchant meanwhile.
		v.Pending, v.Status = false, in.obj.Status
		s.mu.Unlock()
		s.renderChallenge(w, http.StatusConflict, v)
		return
	}
	s.stats.Challenges++
	in.obj.NextAction = nil
	status := "succeeded"
	if result == "complete" {
		snap, event := s.approveLocked(in)
		s.mu.Unlock()
		s.hooks.send(event, snap)
	} else {
		status = "failed"
		e := payment.WireError{Type: "card_error", Code: "payment_intent_authentication_failure",
			Message: "The provided PaymentMethod has failed authentication. Provide a new payment method to attempt " +
				"to fulfill this PaymentIntent again.", Param: "payment_method"}
		in.obj.Status, in.obj.LastPaymentError = string(payment.StatusRequiresPaymentMethod), &e
		s.stats.Declines++
		snap := in.obj
		s.mu.Unlock()
		s.hooks.send(payment.EventFailed, snap)
	}
	if v.ReturnURL == "" {
		v.Pending, v.Status = false, status
		s.renderChallenge(w, http.StatusOK, v)
		return
	}
	back, _ := url.Parse(v.ReturnURL) // checked when the intent was confirmed
	q := back.Query()
	q.Set("payment_intent", in.obj.ID)
	q.Set("redirect_status", status)
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}
