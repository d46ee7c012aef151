package http

import (
	"encoding/json"
	"net"
	"strconv"
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
	user, raw, err := h.userToken(c)
	if err != nil {
		return err
	}
	w, p, err := h.svc.WatchEnter(c.UserContext(), h.request(c, show, user, raw, joinBody{}))
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
	sc := &sseConn{w: w, st: stream{lastID: []byte(c.Get("Last-Event-ID"))}, owner: h.streams}
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
		now := time.Now()
		body, more := sc.st.event(body, w.Current(), true, now)
		sc.hush()
		sc.deadline = now.Add(writeTimeout)
		_ = conn.SetWriteDeadline(sc.deadline)
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

// stream is one connection's writer state: what it last sent, to send on change or every 2 s. lastID keeps its
// backing array from event to event, so a stream allocates nothing per event.
type stream struct {
	lastID   []byte
	lastKind string
	lastAt   time.Time
}

// maxPositionID bounds a position event's id: "p-", two int64s, "-" and "-p".
const maxPositionID = 2 + 20 + 1 + 20 + 2

// event appends to buf the event for u, if one is due at now, and reports whether the stream should go on after
// it. A position, what nearly every event is, is formatted here into buf (the same bytes encoding/json writes for
// it) and its id on the stack: the writers call this for every stream at every tick, so it allocates nothing.
func (s *stream) event(buf []byte, u waitroom.Update, first bool, now time.Time) ([]byte, bool) {
	var kind string
	var idBuf [maxPositionID]byte
	id := idBuf[:0]
	switch u.Status {
	case waitroom.Admitted:
		kind, id = "admitted", append(append(id, "a-"...), u.Grant.JTI...)
	case waitroom.SoldOut:
		kind, id = "sold_out", append(id, 's')
	case waitroom.Closed:
		kind, id = "closed", append(id, 'c')
	default:
		if u.Position > 0 {
			kind = "position"
			id = strconv.AppendInt(append(id, "p-"...), u.Seq, 10)
			id = strconv.AppendInt(append(id, '-'), u.Cursor, 10)
			if u.Paused {
				id = append(id, "-p"...) // a pause or resume is news even when nobody moved
			}
		} else {
			// Before the opening draw nobody has a position yet: say when the sale opens.
			kind, id = "waiting", append(id, 'w')
		}
	}
	same := string(id) == string(s.lastID)
	switch {
	case first && same && kind == "position":
		// A reconnect that has already seen this exact state: resume without a repeat.
		s.lastKind, s.lastAt = kind, now
		return buf, true
	case same && now.Sub(s.lastAt) < 1500*time.Millisecond:
		return buf, true // nothing new, and the 2 s refresh is not due
	case kind == "position" && s.lastKind == "position" && now.Sub(s.lastAt) < time.Second:
		// The queue moves every tick; one position event a second is plenty and keeps a large crowd's write
		// volume bounded (50,000 streams: 50,000 events a second). A later pulse sends the newest position.
		return buf, true
	case (kind == "sold_out" || kind == "waiting") && kind == s.lastKind && now.Sub(s.lastAt) < 10*time.Second:
		return buf, true // a steady state: the heartbeat keeps the stream alive
	}
	start := len(buf)
	buf = append(buf, "id: "...)
	buf = append(buf, id...)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, kind...)
	buf = append(buf, "\ndata: "...)
	if kind == "position" {
		buf = appendPosition(buf, u)
	} else {
		b, err := json.Marshal(eventData(kind, u))
		if err != nil {
			return buf[:start], false
		}
		buf = append(buf, b...)
	}
	buf = append(buf, "\n\n"...)
	s.lastID, s.lastKind, s.lastAt = append(s.lastID[:0], id...), kind, now
	// The fan has what they came for, or the queue is gone: end the stream (the page closes its EventSource).
	return buf, kind != "admitted" && kind != "closed"
}

// appendPosition appends a position event's data: {"position":…,"etaSeconds":…,"paused":…}.
func appendPosition(buf []byte, u waitroom.Update) []byte {
	buf = strconv.AppendInt(append(buf, `{"position":`...), u.Position, 10)
	buf = strconv.AppendInt(append(buf, `,"etaSeconds":`...), seconds(u.ETA), 10)
	buf = strconv.AppendBool(append(buf, `,"paused":`...), u.Paused)
	return append(buf, '}')
}

// eventData is the data of every event but a position, for encoding/json: they are a few per stream.
func eventData(kind string, u waitroom.Update) any {
	switch kind {
	case "admitted":
		return struct {
			Token     string    `json:"admissionToken"`
			ExpiresAt time.Time `json:"expiresAt"`
		}{u.Grant.Token, u.Grant.ExpiresAt.UTC()}
	case "sold_out", "closed":
		return map[string]string{"status": kind}
	}
	return struct {
		Status     string     `json:"status"`
		OpensAt    *time.Time `json:"opensAt,omitempty"`
		EtaSeconds int64      `json:"etaSeconds"`
	}{"waiting", optTime(u.OpensAt), seconds(u.ETA)}
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
