package http

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// errStaleConn: a pooled upstream connection was found closed by the upstream before anything was written on it,
// so the request may be sent on another connection whatever its method.
var errStaleConn = errors.New("edge: pooled upstream connection closed by the upstream")

// checkedConn is an upstream connection for fasthttp's HostClient that, before a request is written on it again,
// checks that the upstream has not closed it meanwhile (an idle timeout, a restart). net/http's Transport learns
// that from the reader it keeps on every pooled connection; HostClient would write the request and read EOF, and
// a POST that may or may not have arrived cannot be sent again (a 502). The check is one non-blocking peek, made
// only on a connection idle for staleCheckAfter: upstreams close connections after long idleness or when they shut
// down, and a busy connection is not worth a system call per request. A close that races a request is a 502 (or
// a replay, if replayable) as with the Transport.
type checkedConn struct {
	net.Conn
	raw      syscall.RawConn // nil where the peek is not available
	lastUsed time.Time       // when a request was last written; zero before the first
	check    bool            // the next Write starts a request
}

const staleCheckAfter = time.Second

func newCheckedConn(c net.Conn) *checkedConn {
	cc := &checkedConn{Conn: c}
	if sc, ok := c.(syscall.Conn); ok && peekSupported {
		if raw, err := sc.SyscallConn(); err == nil {
			cc.raw = raw
		}
	}
	return cc
}

// SetWriteDeadline is called by HostClient once before each request it writes.
func (c *checkedConn) SetWriteDeadline(t time.Time) error {
	c.check = true
	return c.Conn.SetWriteDeadline(t)
}

func (c *checkedConn) Write(b []byte) (int, error) {
	if c.check {
		c.check = false
		now := time.Now()
		if c.raw != nil && !c.lastUsed.IsZero() && now.Sub(c.lastUsed) >= staleCheckAfter && !c.alive() {
			return 0, errStaleConn
		}
		c.lastUsed = now
	}
	return c.Conn.Write(b)
}

func (c *checkedConn) alive() bool {
	// The previous exchange's read deadline may have passed, and the runtime would then refuse the peek.
	if err := c.Conn.SetReadDeadline(time.Time{}); err != nil {
		return false
	}
	return peekAlive(c.raw)
}
