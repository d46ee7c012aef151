package payment_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

func TestVerifySignature(t *testing.T) {
	const secret = "whsec_test"
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded"}`)
	now := time.Unix(1_700_000_000, 0)
	good := payment.Sign(body, secret, now)
	v1 := func(ts int64, secret string, body []byte) string {
		h := hmac.New(sha256.New, []byte(secret))
		h.Write([]byte(strconv.FormatInt(ts, 10) + "." + string(body)))
		return hex.EncodeToString(h.Sum(nil))
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	tests := []struct {
		name    string
		header  string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"valid", good, body, now, nil},
		{"independently computed", "t=" + ts + ",v1=" + v1(now.Unix(), secret, body), body, now, nil},
		{"several v1, one matches (secret rolling)", "t=" + ts + ",v1=" + v1(now.Unix(), "old", body) + ",v1=" + v1(now.Unix(), secret, body), body, now, nil},
		{"v0 and spaces ignored", "t=" + ts + ", v0=abc, v1=" + v1(now.Unix(), secret, body), body, now, nil},
		{"4 minutes old", good, body, now.Add(4 * time.Minute), nil},
		{"too old", good, body, now.Add(6 * time.Minute), payment.ErrSigTimestamp},
		{"from the future", good, body, now.Add(-6 * time.Minute), payment.ErrSigTimestamp},
		{"tampered body", good, []byte(`{"id":"evt_2","type":"payment_intent.succeeded"}`), now, payment.ErrSigMismatch},
		{"wrong secret", "t=" + ts + ",v1=" + v1(now.Unix(), "whsec_other", body), body, now, payment.ErrSigMismatch},
		{"timestamp swapped", "t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + v1(now.Unix(), secret, body), body, now, payment.ErrSigMismatch},
		{"empty header", "", body, now, payment.ErrNoSignature},
		{"no timestamp", "v1=" + v1(now.Unix(), secret, body), body, now, payment.ErrNoSignature},
		{"no v1", "t=" + ts, body, now, payment.ErrNoSignature},
		{"non-hex v1", "t=" + ts + ",v1=zz", body, now, payment.ErrNoSignature},
		{"garbage", "t=abc,v1=00", body, now, payment.ErrNoSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := payment.VerifySignature(tt.body, tt.header, secret, 0, tt.now)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifySignature = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && !errors.Is(err, payment.ErrSignature) {
				t.Fatalf("error %v does not wrap ErrSignature", err)
			}
		})
	}
}

func TestParseEvent(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    payment.Event
		wantErr error
	}{
		{"intent authorized",
			`{"id":"evt_1","object":"event","type":"payment_intent.amount_capturable_updated","created":1700000000,
			"data":{"object":{"id":"pi_1","object":"payment_intent","status":"requires_capture","amount":900,
			"amount_capturable":900,"currency":"inr","metadata":{"booking_id":"b1","attempt_id":"a1"}}}}`,
			payment.Event{ID: "evt_1", Type: payment.EventAuthorized, IntentID: "pi_1", Amount: 900,
				Intent: payment.Intent{ID: "pi_1", Status: payment.StatusRequiresCapture, Amount: 900, AmountCapturable: 900, Currency: "inr"}},
			nil},
		{"charge refunded",
			`{"id":"evt_2","type":"charge.refunded","created":1700000000,"data":{"object":{"id":"ch_1","object":"charge",
			"payment_intent":"pi_1","amount":900,"amount_captured":900,"amount_refunded":300,"metadata":{"booking_id":"b1"}}}}`,
			payment.Event{ID: "evt_2", Type: payment.EventRefunded, IntentID: "pi_1", Amount: 900, Refunded: 300},
			nil},
		{"not json", `{"id":`, payment.Event{}, payment.ErrInvalid},
		{"no id", `{"type":"x","data":{"object":{}}}`, payment.Event{}, payment.ErrInvalid},
		{"id with a NUL", `{"id":"evt_\u0000","type":"x","data":{"object":{}}}`, payment.Event{}, payment.ErrInvalid},
		{"intent id with a slash", `{"id":"evt_5","type":"x","data":{"object":{"id":"pi_1/x","object":"payment_intent"}}}`, payment.Event{}, payment.ErrInvalid},
		{"no object", `{"id":"evt_3","type":"x","data":{}}`, payment.Event{}, payment.ErrInvalid},
		{"object of wrong shape", `{"id":"evt_3","type":"x","data":{"object":{"amount":"lots"}}}`, payment.Event{}, payment.ErrInvalid},
		{"unknown object kept", `{"id":"evt_4","type":"customer.created","data":{"object":{"object":"customer"}}}`,
			payment.Event{ID: "evt_4", Type: "customer.created"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := payment.ParseEvent([]byte(tt.body))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseEvent error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.ID != tt.want.ID || got.Type != tt.want.Type || got.IntentID != tt.want.IntentID ||
				got.Amount != tt.want.Amount || got.Refunded != tt.want.Refunded ||
				got.Intent.Status != tt.want.Intent.Status || got.Intent.AmountCapturable != tt.want.Intent.AmountCapturable {
				t.Fatalf("ParseEvent = %+v, want %+v", got, tt.want)
			}
			if tt.want.IntentID != "" && got.Metadata[payment.MetaBooking] != "b1" {
				t.Fatalf("metadata = %v, want booking_id b1", got.Metadata)
			}
		})
	}
}

func TestKeyAndValidate(t *testing.T) {
	if a, b := payment.Key("b1", "a1", payment.OpAuthorize), payment.Key("b1", "a1", payment.OpCapture); a == b {
		t.Fatalf("authorize and capture share key %q", a)
	}
	if a, b := payment.Key("b1", "a1", payment.OpAuthorize), payment.Key("b1", "a2", payment.OpAuthorize); a == b {
		t.Fatalf("two attempts share key %q", a)
	}
	p := payment.AuthorizeParams{Amount: 100, Currency: "INR", PaymentMethod: "pm_card_ok", BookingID: "b1", AttemptID: "a1"}
	if got, want := p.Key(), payment.Key("b1", "a1", payment.OpAuthorize); got != want {
		t.Fatalf("default key = %q, want %q", got, want)
	}
	tests := []struct {
		name   string
		mutate func(*payment.AuthorizeParams)
		ok     bool
	}{
		{"valid", func(*payment.AuthorizeParams) {}, true},
		{"zero amount", func(p *payment.AuthorizeParams) { p.Amount = 0 }, false},
		{"negative amount", func(p *payment.AuthorizeParams) { p.Amount = -5 }, false},
		{"bad currency", func(p *payment.AuthorizeParams) { p.Currency = "RUPEES" }, false},
		{"no method", func(p *payment.AuthorizeParams) { p.PaymentMethod = "" }, false},
		{"no attempt", func(p *payment.AuthorizeParams) { p.AttemptID = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			tt.mutate(&q)
			err := q.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, payment.ErrInvalid)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
