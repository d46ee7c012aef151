// Package smtptest is a small SMTP server for tests: it listens on a free loopback port, speaks enough of RFC
// 5321 for net/smtp (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; no STARTTLS, no AUTH) and records every
// message it accepts.
package smtptest

import (
	"bufio"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data []byte // as received, dot-unstuffed, CRLF line ends
}

// Parse reads the message's header and body.
func (m Message) Parse() (*mail.Message, error) {
	return mail.ReadMessage(strings.NewReader(string(m.Data)))
}

// Server records messages.
type Server struct {
	Addr string
	ln   net.Listener
	mu   sync.Mutex
	msgs []Message
	wg   sync.WaitGroup
}

// Start runs a server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait waits up to d for at least n messages and returns them. It returns as soon as they are there, so a test
// can give a loaded machine's outbox a generous d (a minute) at no cost when it is quick.
func (s *Server) Wait(n int, d time.Duration) []Message {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if ms := s.Messages(); len(ms) >= n || time.Now().After(deadline) {
			return ms
		}
	}
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.session(c) }()
	}
}

func (s *Server) session(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	reply := func(lines ...string) bool {
		for _, l := range lines {
			w.WriteString(l + "\r\n")
		}
		return w.Flush() == nil
	}
	if !reply("220 smtptest ESMTP") {
		return
	}
	var cur Message
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(verb, "EHLO"):
			reply("250-smtptest", "250-8BITMIME", "250 SMTPUTF8")
		case strings.HasPrefix(verb, "HELO"):
			reply("250 smtptest")
		case strings.HasPrefix(verb, "MAIL FROM:"):
			cur = Message{From: addr(line[len("MAIL FROM:"):])}
			reply("250 ok")
		case strings.HasPrefix(verb, "RCPT TO:"):
			cur.To = append(cur.To, addr(line[len("RCPT TO:"):]))
			reply("250 ok")
		case verb == "DATA":
			if cur.From == "" || len(cur.To) == 0 {
				reply("503 need MAIL and RCPT first")
				continue
			}
			reply("354 go ahead")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				data.WriteString(strings.TrimPrefix(l, ".")) // dot-unstuffing
			}
			cur.Data = []byte(data.String())
			s.mu.Lock()
			s.msgs = append(s.msgs, cur)
			s.mu.Unlock()
			cur = Message{}
			reply("250 accepted")
		case verb == "RSET":
			cur = Message{}
			reply("250 ok")
		case verb == "NOOP":
			reply("250 ok")
		case verb == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}

// addr takes the address out of "<a@b> PARAMS".
func addr(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '>'); strings.HasPrefix(s, "<") && i > 0 {
		return s[1:i]
	}
	return s
}
