package smtptest

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
)

// Part is one leaf of a parsed MIME message, its body decoded.
type Part struct {
	ContentType string // the media type alone, without parameters
	ContentID   string // without the angle brackets
	Disposition string // "inline", "attachment" or empty
	Filename    string
	Body        []byte
}

// Parts walks the message's (nested) multipart body into its leaf parts, in order; t fails on a malformed one.
// Go's multipart reader undoes quoted-printable; base64 is decoded here.
func (m Message) Parts(t testing.TB) []Part {
	t.Helper()
	pm, err := m.Parse()
	if err != nil {
		t.Fatal(err)
	}
	return leaves(t, pm.Header.Get("Content-Type"), pm.Body)
}

func leaves(t testing.TB, ctype string, body io.Reader) []Part {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, _ := io.ReadAll(body)
		return []Part{{ContentType: mt, Body: b}}
	}
	var out []Part
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
		sub, _, _ := mime.ParseMediaType(ct)
		if strings.HasPrefix(sub, "multipart/") {
			out = append(out, leaves(t, ct, p)...)
			continue
		}
		b, _ := io.ReadAll(p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			if b, err = io.ReadAll(base64.NewDecoder(base64.StdEncoding,
				bytes.NewReader(bytes.ReplaceAll(b, []byte("\r\n"), nil)))); err != nil {
				t.Fatal(err)
			}
		}
		disp, dparams, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		out = append(out, Part{ContentType: sub, ContentID: strings.Trim(p.Header.Get("Content-ID"), "<>"),
			Disposition: disp, Filename: dparams["filename"], Body: b})
	}
}
