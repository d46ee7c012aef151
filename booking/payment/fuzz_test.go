package payment_test

import (
	"errors"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// FuzzWebhook: no body or signature header makes verification or parsing panic; no header verifies under two
// secrets (it carries one HMAC, not a bypass); whatever parses has an id and a type.
func FuzzWebhook(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
	f.Add(body, payment.Sign(body, "whsec_f", now))
	f.Add([]byte(`{"id":"evt_2","type":"charge.refunded","data":{"object":{"object":"charge","payment_intent":"pi_1"}}}`), "t=1,v1=00")
	f.Add([]byte(`{}`), "")
	f.Add([]byte(`[`), "t=,v1=,v1=zz")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		err := payment.VerifySignature(body, header, "whsec_f", time.Minute, now)
		if err == nil && payment.VerifySignature(body, header, "whsec_other", time.Minute, now) == nil {
			t.Fatalf("header %q verifies under two secrets", header)
		}
		if err != nil && !errors.Is(err, payment.ErrSignature) {
			t.Fatalf("error %v does not wrap ErrSignature", err)
		}
		ev, err := payment.ParseEvent(body)
		if err != nil {
			if !errors.Is(err, payment.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if ev.ID == "" || ev.Type == "" {
			t.Fatalf("parsed an event without id or type: %+v", ev)
		}
	})
}
