package http

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/waitroom"
)

// streams writes every open position stream of a Handler from a few shared goroutines instead of two per stream
// (fasthttp's body-stream writer and the copy from its pipe): a stream is its hijacked connection, its watcher
// and what it last sent, about a hundred bytes, and costs no goroutine, timer or buffer while it waits. When the
// hub notifies a watcher, the stream is put in the ready list (once, however many notifications come) and a
// writer takes it: it reads the watcher's current state and writes the event, if any is due, with a deadline.
// One shared ticker marks every stream for its heartbeat comment.
//
// A stalled client holds a writer only until the write deadline, and only once its socket buffer is full (tens
// of kilobytes of unread events); then its stream is ended, and its EventSource reconnects and keeps its place.
type streams struct {
	svc       *waitroom.Service
	heartbeat time.Duration

	mu     sync.Mutex
	ready  []*sseConn // streams with news, each at most once (sseConn.state)
	wake   *sync.Cond
	all    map[*sseConn]struct{}
	closed bool
	start  sync.Once
}

// writeTimeout bounds one write to one stream (a write has between half of it and all of it, see flush); a client
// that has not read its last tens of kilobytes by then is gone.
const writeTimeout = 5 * time.Second

// A stream's scheduling state: idle (nothing to do), queued (in the ready list), running (a writer has it),
// dirty (news came while a writer had it: the writer goes round again). It keeps one writer per stream at a time.
const (
	idle int32 = iota
	queued
	running
	dirty
)

// sseConn is one open stream.
type sseConn struct {
	w     *waitroom.Watcher
	owner *streams
	state atomic.Int32
	beat  atomic.Bool // a heartbeat comment is due
	// done is closed at the end, for a server that closes hijacked connections itself: it then hands the
	// connection to a new client, so nothing may touch conn after done is closed (mu orders that).
	done chan struct{}

	mu       sync.Mutex // guards what follows: one writer at a time, and none after the end
	conn     net.Conn
	deadline time.Time // the write deadline conn has
	st       stream
	ended    bool
}

func newStreams(svc *waitroom.Service, heartbeat time.Duration) *streams {
	s := &streams{svc: svc, heartbeat: heartbeat, all: map[*sseConn]struct{}{}}
	s.wake = sync.NewCond(&s.mu)
	return s
}

// writers is how many goroutines write streams: enough that a few stalled clients do not hold up the rest.
func writers() int { return 8 * runtime.GOMAXPROCS(0) }

// add takes over an open stream whose first event has been written; it reports false once the handler has
// closed (the caller ends the stream).
func (s *streams) add(c *sseConn) bool {
	s.start.Do(func() {
		for range writers() {
			go s.write()
		}
		go s.beats()
	})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.all[c] = struct{}{}
	s.mu.Unlock()
	c.w.OnChange(c.kick)
	return true
}

// kick schedules c for a write; it never blocks (the hub calls it).
func (c *sseConn) kick() {
	for {
		switch st := c.state.Load(); st {
		case idle:
			if c.state.CompareAndSwap(idle, queued) {
				s := c.owner
				s.mu.Lock()
				s.ready = append(s.ready, c)
				s.mu.Unlock()
				s.wake.Signal()
				return
			}
		case running:
			if c.state.CompareAndSwap(running, dirty) {
				return
			}
		default: // queued or dirty: the write to come reads the latest state
			return
		}
	}
}

// write is one writer: it takes ready streams and brings each up to date. Its buffers serve every stream it
// writes, so a stream holds none while it waits.
func (s *streams) write() {
	var body, frame []byte
	for {
		s.mu.Lock()
		for len(s.ready) == 0 && !s.closed {
			s.wake.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		c := s.ready[0]
		s.ready[0] = nil
		s.ready = s.ready[1:]
		if len(s.ready) == 0 {
			s.ready = nil // let a burst's backing array go
		}
		s.mu.Unlock()
		c.state.Store(running)
		for {
			body, frame = c.flush(body[:0], frame[:0])
			if c.state.CompareAndSwap(running, idle) {
				break
			}
			c.state.Store(running) // dirty: go round again
		}
	}
}

// flush writes what c's fan should hear now: the event their state calls for, if due, else a heartbeat comment
// if one is due. It ends the stream on a write error or after a final event.
func (c *sseConn) flush(body, frame []byte) ([]byte, []byte) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return body, frame
	}
	now := time.Now()
	body, more := c.st.event(body, c.w.Current(), false, now)
	c.hush()
	if c.beat.Swap(false) && len(body) == 0 {
		body = append(body, ": hb\n\n"...)
	}
	graceful := true
	if len(body) > 0 {
		frame = appendChunk(frame, body)
		// Moving the deadline costs a runtime timer update per write: it is moved only once less than half the
		// timeout is left, so a write gets at least half of it and a stream about one update every few events.
		if c.deadline.Sub(now) < writeTimeout/2 {
			c.deadline = now.Add(writeTimeout)
			_ = c.conn.SetWriteDeadline(c.deadline)
		}
		if _, err := c.conn.Write(frame); err != nil {
			more, graceful = false, false
		}
	}
	if more {
		c.mu.Unlock()
		return body, frame
	}
	c.endLocked(graceful)
	c.mu.Unlock()
	c.owner.forget(c)
	return body, frame
}

// quietFor is how long after a position event its stream is hushed (waitroom.Watcher.Hush): the ticks that only
// move the fan do not wake a writer, which would find nothing due. It is a quarter second less than the second
// stream.event waits, so that the tick due when the second is up still reaches a writer, which decides, though the
// tick came a little earlier than the write it follows.
const quietFor = 750 * time.Millisecond

// hush tells the hub when c may next be due a position, from what it last sent; with mu held.
func (c *sseConn) hush() {
	var until time.Time
	if c.st.lastKind == "position" {
		until = c.st.lastAt.Add(quietFor)
	}
	c.w.Hush(until)
}

// end closes c's stream once: the last chunk (when the connection still works), the connection, the watcher.
func (s *streams) end(c *sseConn, graceful bool) {
	c.mu.Lock()
	ended := c.endLocked(graceful)
	c.mu.Unlock()
	if ended {
		s.forget(c)
	}
}

// endLocked ends c's connection, with mu held, and reports whether this call did.
func (c *sseConn) endLocked(graceful bool) bool {
	if c.ended {
		return false
	}
	c.ended = true
	if graceful {
		_ = c.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = c.conn.Close()
	return true
}

// forget lets an ended stream go: its watcher, its place among the open streams, and the connection itself.
func (s *streams) forget(c *sseConn) {
	s.mu.Lock()
	delete(s.all, c)
	s.mu.Unlock()
	s.svc.Unwatch(c.w)
	if c.done != nil {
		close(c.done)
	}
}

// beats marks every stream for a heartbeat comment each interval: one ticker for all of them.
func (s *streams) beats() {
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	var batch []*sseConn
	for range t.C {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		batch = batch[:0]
		for c := range s.all {
			batch = append(batch, c)
		}
		s.mu.Unlock()
		for _, c := range batch {
			c.beat.Store(true)
			c.kick()
		}
		clear(batch)
	}
}

// close ends every stream (at shutdown) and stops the writers.
func (s *streams) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	open := make([]*sseConn, 0, len(s.all))
	for c := range s.all {
		open = append(open, c)
	}
	s.ready = nil
	s.mu.Unlock()
	s.wake.Broadcast()
	// A writer blocked on a stalled client gives up now instead of at its deadline, so the shutdown does not wait
	// on it. Only on kept connections: the server may hand another one to a new client once done is closed.
	for _, c := range open {
		if c.done == nil {
			_ = c.conn.SetWriteDeadline(time.Now())
		}
	}
	for _, c := range open {
		s.end(c, true)
	}
}

// appendChunk appends b to dst as one chunk of a chunked body.
func appendChunk(dst, b []byte) []byte {
	const digits = "0123456789abcdef"
	var hex [16]byte
	i := len(hex)
	for n := len(b); n > 0 || i == len(hex); n >>= 4 {
		i--
		hex[i] = digits[n&15]
	}
	dst = append(dst, hex[i:]...)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}
