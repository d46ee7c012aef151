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

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
	"github.com/flashseat/flashseat/shared/infra/smtptest"
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
	t.Parallel()
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
	// The new address is confirmed by the code mailed to it, in the page's language.
	codes := mail.Wait(1, time.Minute)
	if len(codes) != 1 {
		t.Fatalf("%d mails, want the contact's code", len(codes))
	}
	cm, err := codes[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	csub, _ := new(mime.WordDecoder).DecodeHeader(cm.Header.Get("Subject"))
	code := csub[strings.LastIndexByte(csub, ' ')+1:]
	if !strings.Contains(csub, "कोड") || len(code) != 6 || strings.Contains(string(codes[0].Data), "confirmed") {
		t.Fatalf("the code's subject %q", csub)
	}
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	st.do("POST", "/api/v1/me/contact/confirm", fan, map[string]string{"code": wrong}).problem(t, 422)
	if c := st.do("POST", "/api/v1/me/contact/confirm", fan, map[string]string{"code": code}); c.status != 200 ||
		c.json(t)["confirmed"] != true {
		t.Fatalf("confirm: %d %s", c.status, c.body)
	}
	st.do("POST", "/api/v1/me/contact/confirm", fan, map[string]string{"code": code}).problem(t, 422) // spent
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

	msgs := mail.Wait(2, time.Minute)[1:]
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
	// The tickets' PDF is attached: a valid PDF, one page per ticket, each naming its seat and its holder (the
	// fan gave no name: their e-mail).
	var attached []smtptest.Part
	for _, p := range msgs[0].Parts(t) {
		if p.Disposition == "attachment" {
			attached = append(attached, p)
		}
	}
	if len(attached) != 1 || attached[0].ContentType != "application/pdf" || attached[0].Filename != "tickets-"+b+".pdf" {
		t.Fatalf("attachments %+v, want the tickets' PDF", attached)
	}
	doc := pdftest.Read(t, attached[0].Body)
	if doc.Pages != 2 || !strings.Contains(doc.Text[0], "Seat A1") || !strings.Contains(doc.Text[1], "Seat A2") ||
		strings.Count(strings.Join(doc.Text, "\n"), "Holder: fan@example.com") != 2 {
		t.Fatalf("attached PDF: %d pages %q, want A1 and A2 held by fan@example.com", doc.Pages, doc.Text)
	}

	// The gateway got both confirmations, the quiet fan's without an address.
	got := gw.wait(t, 3) // and the code
	kinds := map[string]map[string]any{}
	for _, m := range got {
		if m["kind"] == "confirmed" {
			kinds[m["to"].(string)] = m
		}
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
	msgs = mail.Wait(3, time.Minute)
	if len(msgs) != 3 {
		t.Fatalf("%d mails, want the refund's too", len(msgs))
	}
	pm, _ = msgs[2].Parse()
	if subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject")); !strings.Contains(subject, "रिफ़ंड") {
		t.Fatalf("refund subject %q", subject)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(mail.Messages()); n != 3 {
		t.Fatalf("%d mails, want exactly 3 (the code, then each event once)", n)
	}
}

// TestTransferMail: a ticket sent to an e-mail reaches it through the notify path, in the sender's booking's
// language (Hindi here, English for a booking made without one), carrying the claim link whose secret the event
// stream never sees; that link claims the ticket. A transfer by link alone mails nobody.
func TestTransferMail(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	st := newStack(t, "SMTP_ADDR", mail.Addr, "SMTP_FROM", "flashseat <tickets@flashseat.test>",
		"EVENTS_RELAY_INTERVAL", "20ms")
	show := st.show()
	fan, other, friend := st.guest(), st.guest(), st.guest() // no e-mail of their own: no confirmation mails
	paid := func(tok, lang string, seats ...string) []any {
		h := st.do("POST", "/api/v1/bookings/hold", tok, map[string]any{"showId": show, "seatIds": seats}, "Accept-Language", lang)
		p := st.pay(tok, h.json(t)["bookingId"].(string), sim.CardOK, "k1")
		if p.status != 200 {
			t.Fatalf("pay: %d %s", p.status, p.body)
		}
		return p.json(t)["tickets"].([]any)
	}
	send := func(tok string, tk any, body any) string {
		r := st.do("POST", "/api/v1/tickets/"+tk.(map[string]any)["ticketId"].(string)+"/transfer", tok, body)
		if r.status != 201 {
			t.Fatalf("transfer: %d %s", r.status, r.body)
		}
		return r.json(t)["claimUrl"].(string)
	}
	hindi := paid(fan, "hi", "A1", "A2")
	english := paid(other, "", "A3")
	link := send(fan, hindi[0], map[string]string{"email": "friend@example.com"})
	send(fan, hindi[1], map[string]string{})
	send(other, english[0], map[string]string{"email": "pal@example.com"})

	msgs := mail.Wait(2, time.Minute)
	byTo := map[string]string{}
	subjects := map[string]string{}
	for _, m := range msgs {
		pm, err := m.Parse()
		if err != nil {
			t.Fatal(err)
		}
		subjects[m.To[0]], _ = new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
		byTo[m.To[0]] = strings.ReplaceAll(strings.ReplaceAll(string(m.Data), "=\r\n", ""), "=3D", "=")
	}
	if !strings.Contains(subjects["friend@example.com"], "टिकट") || !strings.Contains(byTo["friend@example.com"], link) {
		t.Fatalf("the friend's mail: %q, want Hindi with the claim link %s", subjects["friend@example.com"], link)
	}
	if !strings.HasPrefix(subjects["pal@example.com"], "A ticket for") {
		t.Fatalf("the pal's mail: %q, want English", subjects["pal@example.com"])
	}
	_, secret, _ := strings.Cut(link, "#")
	id := strings.TrimPrefix(strings.Split(link, "#")[0], strings.Split(link, "/transfers/")[0]+"/transfers/")
	if c := st.do("POST", "/api/v1/transfers/"+id+"/claim", friend, map[string]string{"secret": secret}); c.status != 200 {
		t.Fatalf("claim with the mailed link: %d %s", c.status, c.body)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(mail.Messages()); n != 2 {
		t.Fatalf("%d mails, want 2 (the link-only transfer mails nobody)", n)
	}
}

// TestRotatingShowMail: the confirmation of a show with rotating codes carries no static code, QR image or PDF
// (a copy of any would be refused at the door) but links the booking page, where the live code is, in the fan's
// language; the same fan's confirmation of a static show still has its QR codes and PDF.
func TestRotatingShowMail(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	st := newStack(t, "SMTP_ADDR", mail.Addr, "SMTP_FROM", "flashseat <tickets@flashseat.test>",
		"EVENTS_RELAY_INTERVAL", "20ms", "SITE_URL", "https://tickets.example")
	rotating, static := st.show(), st.show()
	if a := st.do("PUT", "/admin/v1/shows/"+rotating, adminToken, `{"ticketCodes":"rotating"}`); a.status != 200 {
		t.Fatalf("ticketCodes: %d %s", a.status, a.body)
	}
	for lang, seats := range map[string][]string{"en": {"A1", "A2"}, "hi": {"A3", "A4"}} {
		t.Run(lang, func(t *testing.T) {
			fan := st.guest()
			email := lang + "@example.com"
			if c := st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": email}, "Accept-Language", lang); c.status != 200 {
				t.Fatalf("contact: %d %s", c.status, c.body)
			}
			mailTo := func(n int) []smtptest.Message {
				t.Helper()
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
					var got []smtptest.Message
					for _, m := range mail.Messages() {
						if m.To[0] == email {
							got = append(got, m)
						}
					}
					if len(got) >= n || time.Now().After(deadline) {
						return got
					}
				}
			}
			if len(mailTo(1)) != 1 {
				t.Fatal("no contact code")
			}
			pay := func(show string) (string, []any) {
				h := st.do("POST", "/api/v1/bookings/hold", fan, map[string]any{"showId": show, "seatIds": seats},
					"Accept-Language", lang)
				b := h.json(t)["bookingId"].(string)
				p := st.pay(fan, b, sim.CardOK, "k-"+show)
				if p.status != 200 {
					t.Fatalf("pay: %d %s", p.status, p.body)
				}
				return b, p.json(t)["tickets"].([]any)
			}
			live := map[string]string{"en": "live on", "hi": "लाइव"}[lang]
			refused := map[string]string{"en": "a screenshot or a print-out will not be accepted",
				"hi": "स्क्रीनशॉट या प्रिंट-आउट स्वीकार नहीं किया जाएगा"}[lang]
			for i, show := range []string{rotating, static} {
				b, tickets := pay(show)
				msgs := mailTo(2 + i)
				if len(msgs) != 2+i {
					t.Fatalf("%d mails to %s, want the confirmation", len(msgs), email)
				}
				var text, html string
				var images, pdfs int
				for _, p := range msgs[1+i].Parts(t) {
					switch p.ContentType {
					case "text/plain":
						text = string(p.Body)
					case "text/html":
						html = string(p.Body)
					case "image/png":
						images++
					case "application/pdf":
						pdfs++
					}
				}
				page := "https://tickets.example/bookings/" + b
				if show == rotating {
					if images != 0 || pdfs != 0 || strings.Contains(html, "cid:") {
						t.Fatalf("rotating show's mail: %d images, %d PDFs, want none", images, pdfs)
					}
					for _, part := range []string{text, html} {
						if !strings.Contains(part, live) || !strings.Contains(part, refused) || !strings.Contains(part, page) ||
							!strings.Contains(part, " 15 ") {
							t.Fatalf("rotating show's mail %q, want the live-code words and %s", part, page)
						}
					}
					if !strings.Contains(html, `href="`+page+`"`) {
						t.Fatalf("html %q, want a link to %s", html, page)
					}
				} else {
					if images != 2 || pdfs != 1 || strings.Contains(text, live) || strings.Contains(text, page) {
						t.Fatalf("static show's mail: %d images, %d PDFs, text %q; want 2 QR codes and the PDF", images, pdfs, text)
					}
				}
				for _, tk := range tickets {
					tm := tk.(map[string]any)
					if !strings.Contains(text, tm["ticketId"].(string)) {
						t.Fatalf("text %q lacks ticket %s", text, tm["ticketId"])
					}
					if code, _ := tm["code"].(string); show == static && !strings.Contains(strings.ReplaceAll(text, "\r\n", "\n"), code) {
						t.Fatalf("static show's text lacks the code %s", code)
					}
				}
				if show == rotating && (strings.Contains(text, "  code ") || strings.Contains(text, "  कोड ")) {
					t.Fatalf("rotating show's text carries a static code: %q", text)
				}
			}
		})
	}
}
