package http

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/waitroom"
)

// events streams a fan's position: `position` at least every 2 s and on change, then `admitted` (and the stream
// ends), or `sold_out` / `closed`. The stream is one watcher in the service's hub: it costs no Redis work per
// update, and the hub never waits for it, so a stalled client only delays itself. Nothing is kept per event,
// so memory does not grow with the stream's age.
//
// Last-Event-ID resumes: the place is kept in Redis across reconnects (within the heartbeat grace), and an id
// equal to the current state's is not sent again.
func (h *Handler) events(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	user, err := h.user(c)
	if err != nil {
		return err
	}
	presented := presentedReceipt(c, show)
	w, p, err := h.svc.Watch(c.UserContext(), show, user, presented)
	if err != nil {
		return err
	}
	h.setReceiptCookie(c, show, p.Receipt)
	lastID := strings.Clone(c.Get("Last-Event-ID"))
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no")
	stop, hb := h.stop, h.cfg.Heartbeat
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer h.svc.Unwatch(w)
		s := stream{w: bw, lastID: lastID}
		if _, err := bw.WriteString("retry: 2000\n\n"); err != nil {
			return
		}
		if !s.send(w.Current(), true) {
			return
		}
		beat := time.NewTicker(hb)
		defer beat.Stop()
		for {
			select {
			case <-stop:
				return
			case <-w.C():
				if !s.send(w.Current(), false) {
					return
				}
			case <-beat.C:
				if _, err := bw.WriteString(": hb\n\n"); err != nil || bw.Flush() != nil {
					return
				}
			}
		}
	})
	return nil
}

// stream is one connection's writer state: what it last sent, to send on change or every 2 s.
type stream struct {
	w        *bufio.Writer
	lastID   string
	lastKind string
	lastAt   time.Time
	buf      []byte
}

// send writes the event for u if due and reports whether the stream should go on.
func (s *stream) send(u waitroom.Update, first bool) bool {
	var kind, id string
	var data any
	switch u.Status {
	case waitroom.Admitted:
		kind, id = "admitted", "a-"+u.Grant.JTI
		data = struct {
			Token     string    `json:"admissionToken"`
			ExpiresAt time.Time `json:"expiresAt"`
		}{u.Grant.Token, u.Grant.ExpiresAt.UTC()}
	case waitroom.SoldOut:
		kind, id, data = "sold_out", "s", map[string]string{"status": "sold_out"}
	case waitroom.Closed:
		kind, id, data = "closed", "c", map[string]string{"status": "closed"}
	default:
		if u.Position > 0 {
			kind = "position"
			id = "p-" + strconv.FormatInt(u.Seq, 10) + "-" + strconv.FormatInt(u.Cursor, 10)
			if u.Paused {
				id += "-p" // a pause or resume is news even when nobody moved
			}
			data = struct {
				Position   int64 `json:"position"`
				EtaSeconds int64 `json:"etaSeconds"`
				Paused     bool  `json:"paused"`
			}{u.Position, seconds(u.ETA), u.Paused}
		} else {
			// Before the opening draw nobody has a position yet: say when the sale opens.
			kind, id = "waiting", "w"
			data = struct {
				Status     string     `json:"status"`
				OpensAt    *time.Time `json:"opensAt,omitempty"`
				EtaSeconds int64      `json:"etaSeconds"`
			}{"waiting", optTime(u.OpensAt), seconds(u.ETA)}
		}
	}
	now := time.Now()
	switch {
	case first && id == s.lastID && kind == "position":
		// A reconnect that has already seen this exact state: resume without a repeat.
		s.lastKind, s.lastAt = kind, now
		return true
	case id == s.lastID && now.Sub(s.lastAt) < 1500*time.Millisecond:
		return true // nothing new, and the 2 s refresh is not due
	case kind == "position" && s.lastKind == "position" && now.Sub(s.lastAt) < time.Second:
		// The queue moves every tick; one position event a second is plenty and keeps a large crowd's write
		// volume bounded (50,000 streams: 50,000 events a second). A later pulse sends the newest position.
		return true
	case (kind == "sold_out" || kind == "waiting") && kind == s.lastKind && now.Sub(s.lastAt) < 10*time.Second:
		return true // a steady state: the heartbeat keeps the stream alive
	}
	b, err := json.Marshal(data)
	if err != nil {
		return false
	}
	s.buf = append(s.buf[:0], "id: "...)
	s.buf = append(s.buf, id...)
	s.buf = append(s.buf, "\nevent: "...)
	s.buf = append(s.buf, kind...)
	s.buf = append(s.buf, "\ndata: "...)
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil || s.w.Flush() != nil {
		return false
	}
	s.lastID, s.lastKind, s.lastAt = id, kind, now
	// The fan has what they came for, or the queue is gone: end the stream (the page closes its EventSource).
	return kind != "admitted" && kind != "closed"
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
