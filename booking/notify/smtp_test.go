package notify_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/internal/smtptest"
	"github.com/flashseat/flashseat/booking/notify"
	"github.com/flashseat/flashseat/booking/ticket/qr"
)

// part is one leaf of a parsed MIME message.
type part struct {
	ctype, cid string
	body       []byte
}

// leaves walks a multipart body into its leaf parts (Go's multipart reader undoes quoted-printable; base64 is
// decoded here).
func leaves(t *testing.T, ctype string, body io.Reader) []part {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, _ := io.ReadAll(body)
		return []part{{ctype: mt, body: b}}
	}
	var out []part
	r := multipart.NewReader(body, params["boundary"])
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ct := p.Header.Get("Content-Type")
		if sub, _, _ := mime.ParseMediaType(ct); strings.HasPrefix(sub, "multipart/") {
			out = append(out, leaves(t, ct, p)...)
			continue
		}
		b, _ := io.ReadAll(p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			b = decodeBase64(t, b)
		}
		sub, _, _ := mime.ParseMediaType(ct)
		out = append(out, part{ctype: sub, cid: strings.Trim(p.Header.Get("Content-ID"), "<>"), body: b})
	}
}

// TestSMTPMessage: a message with inline QR codes reaches an SMTP server as multipart/related: the text and the
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
	m := notify.Message{UserID: "u1", To: "fan@example.com", Language: "hi", Kind: "confirmed", EventID: "ob_7",
		Subject: "आपके टिकट", Text: "नमस्ते\nseat A1\n", HTML: `<p><img src="cid:tk1@flashseat"><img src="cid:tk2@flashseat"></p>`,
		Inline: []notify.Attachment{{Name: "a1.png", ContentType: "image/png", ContentID: "tk1@flashseat", Data: qr1},
			{Name: "a2.png", ContentType: "image/png", ContentID: "tk2@flashseat", Data: qr2}}}
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
	ps := leaves(t, pm.Header.Get("Content-Type"), pm.Body)
	if len(ps) != 4 || ps[0].ctype != "text/plain" ||
		strings.ReplaceAll(string(ps[0].body), "\r\n", "\n") != m.Text || ps[1].ctype != "text/html" ||
		string(ps[1].body) != m.HTML {
		t.Fatalf("parts %+v, want text, html and two images", ps)
	}
	for i, want := range [][]byte{qr1, qr2} {
		p := ps[2+i]
		if p.ctype != "image/png" || p.cid != m.Inline[i].ContentID || !bytes.Equal(p.body, want) {
			t.Fatalf("image %d: %s %s (%d bytes)", i, p.ctype, p.cid, len(p.body))
		}
		if _, err := png.Decode(bytes.NewReader(p.body)); err != nil {
			t.Fatalf("image %d is not a PNG: %v", i, err)
		}
	}
}

func decodeBase64(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(bytes.ReplaceAll(b, []byte("\r\n"), nil))))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
