package http

import (
	"encoding/json"
	"net"
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
// The handler answers by hijacking the connection: once the edge's middleware has run, the headers and the first
// event go out in one write and the stream is handed to the handler's shared writers (sse.go), so a held stream
// keeps no goroutine, timer or buffer of its own. The body is chunked, as before, and the connection closes with
// the stream.
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
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no")
	fc := c.Context()
	fc.Response.Header.SetContentLength(-1) // chunked
	fc.Response.Header.SetConnectionClose()
	sc := &sseConn{w: w, st: stream{lastID: strings.Clone(c.Get("Last-Event-ID"))}, owner: h.streams}
	if !c.App().Server().KeepHijackedConns {
		// The server closes a hijacked connection when its handler returns: hold it open until the stream ends.
		sc.done = make(chan struct{})
	}
	// The server does not call the hijack handler if the connection fails first; the watcher is let go then.
	abandon := time.AfterFunc(time.Minute, func() {
		sc.mu.Lock()
		sc.ended = true
		sc.mu.Unlock()
		h.svc.Unwatch(w)
	})
	fc.HijackSetNoResponse(true)
	fc.Hijack(func(conn net.Conn) {
		if !abandon.Stop() {
			_ = conn.Close() // kept by the server, closed by nobody else
			return
		}
		sc.mu.Lock()
		sc.conn = conn
		head := fc.Response.Header.AppendBytes(make([]byte, 0, 512))
		body := append(make([]byte, 0, 256), "retry: 2000\n\n"...)
		body, more := sc.st.event(body, w.Current(), true)
		_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := conn.Write(appendChunk(head, body))
		sc.mu.Unlock()
		switch {
		case err != nil:
			h.streams.end(sc, false)
		case !more || !h.streams.add(sc):
			h.streams.end(sc, true)
		}
		if sc.done != nil {
			<-sc.done
		}
	})
	return nil
}

// stream is one connection's writer state: what it last sent, to send on change or every 2 s.
type stream struct {
	lastID   string
	lastKind string
	lastAt   time.Time
}

// event appends to buf the event for u, if one is due, and reports whether the stream should go on after it.
func (s *stream) event(buf []byte, u waitroom.Update, first bool) ([]byte, bool) {
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
		return buf, true
	case id == s.lastID && now.Sub(s.lastAt) < 1500*time.Millisecond:
		return buf, true // nothing new, and the 2 s refresh is not due
	case kind == "position" && s.lastKind == "position" && now.Sub(s.lastAt) < time.Second:
		// The queue moves every tick; one position event a second is plenty and keeps a large crowd's write
		// volume bounded (50,000 streams: 50,000 events a second). A later pulse sends the newest position.
		return buf, true
	case (kind == "sold_out" || kind == "waiting") && kind == s.lastKind && now.Sub(s.lastAt) < 10*time.Second:
		return buf, true // a steady state: the heartbeat keeps the stream alive
	}
	b, err := json.Marshal(data)
	if err != nil {
		return buf, false
	}
	buf = append(buf, "id: "...)
	buf = append(buf, id...)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, kind...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	s.lastID, s.lastKind, s.lastAt = id, kind, now
	// The fan has what they came for, or the queue is gone: end the stream (the page closes its EventSource).
	return buf, kind != "admitted" && kind != "closed"
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
