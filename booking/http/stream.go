package http

import (
	"bufio"
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// seatStream serves a show's seat events as text/event-stream: event "seat", data {"seatId","status"}. Each
// client reads from its own bounded buffer fed by the process's one subscription per show, so a slow client
// delays nobody: when it falls behind it is disconnected, and EventSource reconnects and reloads.
func (s *Server) seatStream(c *fiber.Ctx) error {
	_, events, stop, err := s.openStream(c, s.cfg.Feed)
	if err != nil {
		return err
	}
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
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case msg, ok := <-events:
				if !ok {
					return // fell behind or the subscription ended: the client reconnects
				}
				_, _ = w.WriteString("event: seat\ndata: ")
				_, _ = w.Write(msg)
				_, _ = w.WriteString("\n\n")
			case <-tick.C:
				_, _ = w.WriteString(": ping\n\n")
			}
			if err := w.Flush(); err != nil {
				return // the client went away
			}
		}
	})
	return nil
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
