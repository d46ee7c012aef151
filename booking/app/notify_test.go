package app_test

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/internal/smtptest"
	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
)

const notifySecret = "notify-secret-0123456789"

// notifyGateway is the operator's notification gateway (NOTIFY_WEBHOOK_URL): it checks each POST's signature
// and keeps the messages.
type notifyGateway struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []map[string]any
}

func newNotifyGateway(t *testing.T) *notifyGateway {
	g := &notifyGateway{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := payment.VerifySignature(body, r.Header.Get("Flashseat-Signature"), notifySecret, time.Minute, time.Now()); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		g.mu.Lock()
		g.msgs = append(g.msgs, m)
		g.mu.Unlock()
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *notifyGateway) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g.mu.Lock()
		ms := append([]map[string]any(nil), g.msgs...)
		g.mu.Unlock()
		if len(ms) >= n {
			return ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("notification gateway got %d messages, want %d", len(ms), n)
		}
	}
}

// TestFanNotifications: a guest gives an e-mail (PUT /api/v1/me/contact) from a Hindi page, holds from it and
// pays: the test's SMTP server receives the confirmation in Hindi with each ticket's QR code inline; the refund
// is mailed too. The notification gateway gets every message, also a fan's who gave no e-mail (who gets no mail).
// Each event is notified once. Bad contact input is a 4xx problem.
func TestFanNotifications(t *testing.T) {
	mail := smtptest.Start(t)
	gw := newNotifyGateway(t)
	st := newStack(t, "SMTP_ADDR", mail.Addr, "SMTP_FROM", "flashseat <tickets@flashseat.test>",
		"NOTIFY_WEBHOOK_URL", gw.srv.URL, "NOTIFY_WEBHOOK_SECRET", notifySecret, "EVENTS_RELAY_INTERVAL", "20ms",
		"REFUND_WINDOW", "1h")
	show := st.show()
	fan, quiet := st.guest(), st.guest()

	if c := st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "fan@example.com"}, "Accept-Language", "hi-IN,hi;q=0.9,en;q=0.5"); c.status != 200 ||
		c.json(t)["language"] != "hi" {
		t.Fatalf("contact: %d %s", c.status, c.body)
	}
	if c := st.do("GET", "/api/v1/me/contact", fan, nil); c.status != 200 || c.json(t)["email"] != "fan@example.com" {
		t.Fatalf("contact: %d %s", c.status, c.body)
	}
	st.do("GET", "/api/v1/me/contact", quiet, nil).problem(t, 404)
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "not an address"}).problem(t, 422)
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "Fan <fan@example.com>"}).problem(t, 422)
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "fan@example.com", "language": "Hindi!"}).problem(t, 422)
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{}).problem(t, 400)
	st.do("PUT", "/api/v1/me/contact", "", map[string]string{"email": "fan@example.com"}).problem(t, 401)

	h := st.do("POST", "/api/v1/bookings/hold", fan, map[string]any{"showId": show, "seatIds": []string{"A1", "A2"}},
		"Accept-Language", "hi")
	b := h.json(t)["bookingId"].(string)
	paid := st.pay(fan, b, sim.CardOK, "k1")
	if paid.status != 200 {
		t.Fatalf("pay: %d %s", paid.status, paid.body)
	}
	tickets := paid.json(t)["tickets"].([]any)
	qb := st.hold(quiet, show, "A5")
	if p := st.pay(quiet, qb, sim.CardOK, "k1"); p.status != 200 {
		t.Fatalf("pay: %d %s", p.status, p.body)
	}

	msgs := mail.Wait(1, 15*time.Second)
	if len(msgs) != 1 || msgs[0].To[0] != "fan@example.com" {
		t.Fatalf("mail %+v, want one to fan@example.com", msgs)
	}
	pm, err := msgs[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
	if !strings.Contains(subject, "टिकट") || pm.Header.Get("Content-Language") != "hi" {
		t.Fatalf("subject %q (%s), want the Hindi confirmation", subject, pm.Header.Get("Content-Language"))
	}
	raw := string(msgs[0].Data)
	for _, tk := range tickets {
		id := tk.(map[string]any)["ticketId"].(string)
		if !strings.Contains(raw, "Content-ID: <"+id+"@flashseat>") || !strings.Contains(raw, "cid:"+id+"@flashseat") {
			t.Fatalf("the mail lacks ticket %s's inline QR code", id)
		}
	}
	if strings.Count(raw, "Content-Type: image/png") != 2 {
		t.Fatalf("want 2 QR images in the mail")
	}

	// The gateway got both confirmations, the quiet fan's without an address.
	got := gw.wait(t, 2)
	kinds := map[string]map[string]any{}
	for _, m := range got {
		kinds[m["to"].(string)] = m
	}
	if m := kinds["fan@example.com"]; m == nil || m["kind"] != "confirmed" || m["language"] != "hi" ||
		len(m["attachments"].([]any)) != 2 {
		t.Fatalf("gateway message for the fan: %v", m)
	}
	if m := kinds[""]; m == nil || m["kind"] != "confirmed" || m["language"] != "en" {
		t.Fatalf("gateway message for the fan without e-mail: %v", m)
	}

	if r := st.do("POST", "/api/v1/bookings/"+b+"/refund", fan, nil); r.status != 200 {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	msgs = mail.Wait(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("%d mails, want the refund's too", len(msgs))
	}
	pm, _ = msgs[1].Parse()
	if subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject")); !strings.Contains(subject, "रिफ़ंड") {
		t.Fatalf("refund subject %q", subject)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(mail.Messages()); n != 2 {
		t.Fatalf("%d mails, want exactly 2 (each event once)", n)
	}
}
