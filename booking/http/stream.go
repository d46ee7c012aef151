package http

import (
	"bufio"
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/session"
)

// seatStream serves a show's seat events as text/event-stream: event "seat", data {"seatId","status"}. Each
// client reads from its own bounded buffer fed by the process's one subscription per show, so a slow client
// delays nobody: when it falls behind it is disconnected, and EventSource reconnects and reloads.
func (s *Server) seatStream(c *fiber.Ctx) error {
	keys := s.streamKeys(c)
	if !s.streams.Take(keys, []int{s.cfg.SeatStreams.PerIdentity, s.cfg.SeatStreams.PerPrefix}) {
		return booking.ErrTooManyStreams
	}
	_, events, stop, err := s.openStream(c, s.cfg.Feed)
	if err != nil {
		s.streams.Give(keys...)
		return err
	}
	stop = func(stop func()) func() { return func() { stop(); s.streams.Give(keys...) } }(stop)
	heartbeat, done, gauge := s.cfg.Heartbeat, s.done, s.metrics.Streams
	// The writer runs after the handler returned, on a goroutine fasthttp starts for it (its writes go through a
	// pipe the connection copies to the socket): it must not touch c, which fiber reuses for the next request.
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer stop()
		gauge.Inc()
		defer gauge.Dec()
		// Headers and a first comment go out at once, so clients and proxies see the stream open.
		if _, err := w.WriteString("retry: 2000\n: connected\n\n"); err != nil || w.Flush() != nil {
			return
		}
		pump(w, done, events, heartbeat, func(msg []byte) bool {
			_, _ = w.WriteString("event: seat\ndata: ")
			_, _ = w.Write(msg)
			_, _ = w.WriteString("\n\n")
			return w.Flush() == nil
		})
	})
	return nil
}

// StreamCaps bound the seat-map streams one booking process holds open, as the waiting room bounds its queue
// streams (shared/streamcap): PerIdentity per fan (their user token's id, or without one their address), default
// 8, for a fan's tabs; PerPrefix per address prefix (an IPv4 address or an IPv6 /64, shared/admission's Prefix),
// default 64, which an operator raises (SEAT_STREAMS_PER_PREFIX) for fans behind one carrier NAT or office.
type StreamCaps struct {
	PerIdentity int
	PerPrefix   int
}

func (sc StreamCaps) withDefaults() StreamCaps {
	if sc.PerIdentity <= 0 {
		sc.PerIdentity = 8
	}
	if sc.PerPrefix <= 0 {
		sc.PerPrefix = 64
	}
	return sc
}

// streamKeys are the identity and the address prefix a seat stream is counted under. The address is the one the
// edge (booking's only public client) decided for the client (admission.ClientHeader: behind a CDN, not the
// CDN's); else the last X-Forwarded-For entry, the one a proxy appends for its peer; else the connection's own.
func (s *Server) streamKeys(c *fiber.Ctx) []string {
	addr, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if a, err := netip.ParseAddr(c.Get(admission.ClientHeader)); err == nil {
		addr = a
	} else if xff := c.Get(fiber.HeaderXForwardedFor); xff != "" {
		last := xff[strings.LastIndexByte(xff, ',')+1:]
		if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
			addr = a
		}
	}
	addr = addr.Unmap()
	identity := "addr:" + addr.String()
	if raw, _ := session.Token(c); raw != "" && s.users != nil {
		if id, err := s.users.Verify(raw); err == nil && len(id) <= 256 {
			identity = "user:" + id
		}
	}
	return []string{identity, "prefix:" + admission.Prefix(addr)}
}

// pump runs an open stream until the server shuts down, the subscription ends (the client fell behind, or the
// feed stopped: it reconnects) or the client goes away. Each message is handed to send, which writes and flushes
// it and returns false to end the stream; a ": ping" comment every heartbeat keeps proxies and the client from
// taking a quiet stream for a dead one.
func pump(w *bufio.Writer, done <-chan struct{}, events <-chan []byte, heartbeat time.Duration, send func([]byte) bool) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case msg, ok := <-events:
			if !ok || !send(msg) {
				return
			}
		case <-tick.C:
			if _, err := w.WriteString(": ping\n\n"); err != nil || w.Flush() != nil {
				return // the client went away
			}
		}
	}
}

// openStream starts an event stream of the path's show from feed: it checks the show, subscribes, and sets the
// stream's headers. The caller must call stop when the stream ends.
func (s *Server) openStream(c *fiber.Ctx, feed SeatFeed) (showID string, events <-chan []byte, stop func(), err error) {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return "", nil, nil, err
	}
	if _, err := s.svc.Show(c.UserContext(), id); err != nil {
		return "", nil, nil, err
	}
	if feed == nil || s.closing.Load() {
		return "", nil, nil, fiber.ErrServiceUnavailable
	}
	events, stop = feed.Subscribe(context.Background(), id)
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // tell proxies not to buffer
	return id, events, stop, nil
}
