package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"
)

// SMTPConfig is an SMTP relay.
type SMTPConfig struct {
	Addr     string // host:port (SMTP_ADDR)
	From     string // the sender (SMTP_FROM), "flashseat <tickets@example.com>" or a bare address
	Username string // SMTP_USERNAME and SMTP_PASSWORD: PLAIN authentication, which net/smtp only sends over TLS
	Password string // (STARTTLS) or to localhost
	Timeout  time.Duration
}

// SMTP sends messages by e-mail with net/smtp: STARTTLS when the server offers it, PLAIN auth when configured.
type SMTP struct {
	cfg  SMTPConfig
	from *mail.Address
}

// NewSMTP returns the notifier of cfg.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("notify: SMTP_FROM: %w", err)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("notify: SMTP_ADDR: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &SMTP{cfg: cfg, from: from}, nil
}

// Notify mails m to the fan's address; ErrNoAddress when they gave none.
func (s *SMTP) Notify(ctx context.Context, m Message) error {
	if m.To == "" {
		return ErrNoAddress
	}
	msg, err := s.compose(m, time.Now())
	if err != nil {
		return err
	}
	// net/smtp has no context: bound the whole exchange by the connection's deadline instead.
	deadline := time.Now().Add(s.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn, err := (&net.Dialer{Deadline: deadline}).DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("notify: smtp dial: %w", err)
	}
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("notify: smtp: %w", err)
	}
	defer c.Close()
	if err := s.exchange(c, host, m.To, msg); err != nil {
		return fmt.Errorf("notify: smtp: %w", err)
	}
	return nil
}

func (s *SMTP) exchange(c *smtp.Client, host, to string, msg []byte) error {
	if err := c.Hello("flashseat"); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(tlsConfig(host)); err != nil {
			return err
		}
	}
	if s.cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// compose builds the MIME message: a multipart/alternative (text, then HTML); inside a multipart/related with
// the inline images the HTML shows by Content-ID when there are any; inside a multipart/mixed with the attached
// files (the tickets' PDF) when there are any.
func (s *SMTP) compose(m Message, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&buf, "%s: %s\r\n", k, v) }
	h("From", s.from.String())
	h("To", (&mail.Address{Address: m.To}).String())
	h("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	h("Date", now.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+randomToken()+"@flashseat>")
	if m.EventID != "" {
		h("X-Flashseat-Event", m.EventID)
	}
	if m.Language != "" {
		h("Content-Language", m.Language)
	}
	h("MIME-Version", "1.0")

	ctype, body, err := multipartOf("multipart/alternative", func(w *multipart.Writer) error {
		for _, part := range []struct{ ctype, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
			if part.body == "" {
				continue
			}
			pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {part.ctype + "; charset=utf-8"},
				"Content-Transfer-Encoding": {"quoted-printable"}})
			if err != nil {
				return err
			}
			qp := quotedprintable.NewWriter(pw)
			if _, err := qp.Write([]byte(part.body)); err != nil {
				return err
			}
			if err := qp.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && len(m.Inline) > 0 {
		ctype, body, err = wrap(`multipart/related; type="multipart/alternative"`, ctype, body, m.Inline, "inline")
	}
	if err == nil && len(m.Attached) > 0 {
		ctype, body, err = wrap("multipart/mixed", ctype, body, m.Attached, "attachment")
	}
	if err != nil {
		return nil, err
	}
	h("Content-Type", ctype)
	buf.WriteString("\r\n")
	buf.Write(body)
	return buf.Bytes(), nil
}

// multipartOf writes a multipart body with parts and returns its Content-Type (with the boundary) and bytes.
func multipartOf(mediaType string, parts func(*multipart.Writer) error) (string, []byte, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := parts(w); err != nil {
		return "", nil, err
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	return mediaType + "; boundary=" + w.Boundary(), b.Bytes(), nil
}

// wrap makes a multipart of mediaType whose first part is the body so far and the rest are files, base64, with
// the disposition given (inline images carry their Content-ID).
func wrap(mediaType, ctype string, body []byte, files []Attachment, disposition string) (string, []byte, error) {
	return multipartOf(mediaType, func(w *multipart.Writer) error {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {ctype}})
		if err != nil {
			return err
		}
		if _, err := pw.Write(body); err != nil {
			return err
		}
		for _, a := range files {
			hdr := textproto.MIMEHeader{
				"Content-Type":              {a.ContentType + `; name="` + a.Name + `"`},
				"Content-Transfer-Encoding": {"base64"},
				"Content-Disposition":       {disposition + `; filename="` + a.Name + `"`},
			}
			if a.ContentID != "" {
				hdr["Content-ID"] = []string{"<" + a.ContentID + ">"} // as RFC 2045 spells it; Set would write Content-Id
			}
			pw, err := w.CreatePart(hdr)
			if err != nil {
				return err
			}
			if _, err := pw.Write(base64Lines(a.Data)); err != nil {
				return err
			}
		}
		return nil
	})
}

// base64Lines is data in base64, in lines of 76 characters as MIME requires.
func base64Lines(data []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return []byte(b.String())
}

func randomToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func tlsConfig(host string) *tls.Config {
	return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
}
