package http_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/r3labs/sse/v2"

	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrhttp "github.com/flashseat/flashseat/waitroom/http"
)

// streamHandler serves s's waiting room from a second handler with its own heartbeat, on a server that keeps
// hijacked connections as the edge's does or, with group, on one that closes them itself.
func streamHandler(t *testing.T, s *server, heartbeat time.Duration, group bool) (string, *wrhttp.Handler) {
	t.Helper()
	h := wrhttp.New(wrhttp.Config{Service: s.svc, Users: token.NewUserVerifier(userSecret, nil, 0), Issuer: s.issuer,
		Heartbeat: heartbeat})
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Server().KeepHijackedConns = !group
	if group {
		h.Mount(app.Group(""))
	} else {
		h.Mount(app)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() {
		h.Close()
		_ = app.ShutdownWithTimeout(2 * time.Second)
	})
	return "http://" + ln.Addr().String(), h
}

// A stream on a server that closes hijacked connections when their handler returns (mounted on a group) still
// follows the fan to admission.
func TestStreamOnAGroup(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	base, _ := streamHandler(t, s, 0, true)
	show := s.show(t, 4, 100)
	for _, u := range []string{"g0", "g1", "g2"} {
		s.join(t, show, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var kinds []string
	err := follow(ctx, base+"/queue/"+show+"/events?access_token="+s.user(t, "g2"), func(ev *sse.Event) bool {
		kinds = append(kinds, string(ev.Event))
		return string(ev.Event) != "admitted"
	})
	if err != nil || len(kinds) == 0 || kinds[len(kinds)-1] != "admitted" {
		t.Fatalf("events %v, err %v; want positions then admitted", kinds, err)
	}
}

// Heartbeats come from the handler's one ticker to every waiting stream, and Close ends every stream with the
// chunked body's last chunk, so a client sees a clean end rather than a reset.
func TestStreamHeartbeatsAndClose(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	base, h := streamHandler(t, s, 100*time.Millisecond, false)
	show := s.show(t, 0.001, 1)
	s.join(t, show, "first") // admitted, or next: the fans below keep waiting
	bodies := make([]*bufio.Reader, 3)
	for i := range bodies {
		req, _ := http.NewRequest("GET", base+"/queue/"+show+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+s.user(t, "hb"+string(rune('a'+i))))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
			resp.TransferEncoding == nil || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("status %d, headers %v, transfer encoding %v", resp.StatusCode, resp.Header, resp.TransferEncoding)
		}
		bodies[i] = bufio.NewReader(resp.Body)
	}
	for i, b := range bodies {
		beats := 0
		deadline := time.Now().Add(10 * time.Second)
		for beats < 2 && time.Now().Before(deadline) {
			line, err := b.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
			if line == ": hb\n" {
				beats++
			}
		}
		if beats < 2 {
			t.Fatalf("stream %d: %d heartbeats in 10 s at a 100 ms interval", i, beats)
		}
	}
	h.Close()
	for i, b := range bodies {
		// net/http reports a chunked body cut off before its last chunk as io.ErrUnexpectedEOF.
		if rest, err := io.ReadAll(b); err != nil {
			t.Fatalf("stream %d after Close: %v (read %q)", i, err, rest)
		}
	}
}
