package notify_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"mime"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/notify"
	"github.com/flashseat/flashseat/booking/ticket/qr"
	"github.com/flashseat/flashseat/shared/infra/smtptest"
)

// TestSMTPMessage: a message with inline QR codes and an attached file reaches an SMTP server as
// multipart/mixed around a multipart/related: the text and the
// HTML (which names each image by cid:), and each PNG with its Content-ID; the subject in Hindi survives its
// encoding. A fan without an address is ErrNoAddress, not an error to retry.
func TestSMTPMessage(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t)
	n, err := notify.NewSMTP(notify.SMTPConfig{Addr: srv.Addr, From: "flashseat <tickets@flashseat.test>"})
	if err != nil {
		t.Fatal(err)
	}
	qr1, _ := qr.PNG("code-one", 128)
	qr2, _ := qr.PNG("code-two", 128)
	doc := []byte("%PDF-1.3 stand-in: this test is about MIME, booking/app's reads the real PDF\n")
	m := notify.Message{UserID: "u1", To: "fan@example.com", Language: "hi", Kind: "confirmed", EventID: "ob_7",
		Subject: "आपके टिकट", Text: "नमस्ते\nseat A1\n", HTML: `<p><img src="cid:tk1@flashseat"><img src="cid:tk2@flashseat"></p>`,
		Inline: []notify.Attachment{{Name: "a1.png", ContentType: "image/png", ContentID: "tk1@flashseat", Data: qr1},
			{Name: "a2.png", ContentType: "image/png", ContentID: "tk2@flashseat", Data: qr2}},
		Attached: []notify.Attachment{{Name: "tickets-b1.pdf", ContentType: "application/pdf", Data: doc}}}
	if err := n.Notify(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if err := n.Notify(context.Background(), notify.Message{Subject: "x"}); !errors.Is(err, notify.ErrNoAddress) {
		t.Fatalf("no address: %v, want ErrNoAddress", err)
	}
	msgs := srv.Wait(1, 5*time.Second)
	if len(msgs) != 1 || msgs[0].From != "tickets@flashseat.test" || len(msgs[0].To) != 1 || msgs[0].To[0] != "fan@example.com" {
		t.Fatalf("envelopes %+v", msgs)
	}
	pm, err := msgs[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if subj, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject")); subj != m.Subject {
		t.Fatalf("subject %q, want %q", subj, m.Subject)
	}
	if pm.Header.Get("Content-Language") != "hi" || pm.Header.Get("X-Flashseat-Event") != "ob_7" {
		t.Fatalf("headers %v", pm.Header)
	}
	ps := msgs[0].Parts(t)
	if len(ps) != 5 || ps[0].ContentType != "text/plain" ||
		strings.ReplaceAll(string(ps[0].Body), "\r\n", "\n") != m.Text || ps[1].ContentType != "text/html" ||
		string(ps[1].Body) != m.HTML {
		t.Fatalf("parts %+v, want text, html, two images and a PDF", ps)
	}
	if pm.Header.Get("Content-Type")[:len("multipart/mixed")] != "multipart/mixed" {
		t.Fatalf("content type %s, want multipart/mixed around the message and its attachment", pm.Header.Get("Content-Type"))
	}
	for i, want := range [][]byte{qr1, qr2} {
		p := ps[2+i]
		if p.ContentType != "image/png" || p.ContentID != m.Inline[i].ContentID || p.Disposition != "inline" ||
			!bytes.Equal(p.Body, want) {
			t.Fatalf("image %d: %s %s (%d bytes)", i, p.ContentType, p.ContentID, len(p.Body))
		}
		if _, err := png.Decode(bytes.NewReader(p.Body)); err != nil {
			t.Fatalf("image %d is not a PNG: %v", i, err)
		}
	}
	if p := ps[4]; p.ContentType != "application/pdf" || p.Disposition != "attachment" ||
		p.Filename != "tickets-b1.pdf" || !bytes.Equal(p.Body, doc) {
		t.Fatalf("attachment %s %s %q (%d bytes)", p.ContentType, p.Disposition, p.Filename, len(p.Body))
	}
}
