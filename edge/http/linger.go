package http

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// An answer to a request the server stopped reading (headers over its read buffer: 431; a body over BODY_LIMIT:
// 413) is followed by fasthttp closing the connection while the client may still be sending the rest. Closing a
// socket with unread bytes makes the kernel reset the connection, and a reset discards what the client had not
// read yet: the answer. So such a connection lingers, as net/http's server does after its own 431: the edge
// shuts its side for writing (the client sees the answer end), then reads and drops what still comes, for at most
// lingerFor and lingerMax bytes, and only then closes.
const (
	lingerFor = 2 * time.Second
	lingerMax = 4 << 20
)

// lingerListener hands out connections that can be told to linger when closed.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c}, nil
}

type lingerConn struct {
	net.Conn
	linger atomic.Bool
}

// Close closes the connection, after lingering (on its own goroutine: the server's worker goes on) if asked to.
func (c *lingerConn) Close() error {
	if !c.linger.Load() {
		return c.Conn.Close()
	}
	go func() {
		if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = c.Conn.SetReadDeadline(time.Now().Add(lingerFor))
		_, _ = io.CopyN(io.Discard, c.Conn, lingerMax)
		_ = c.Conn.Close()
	}()
	return nil
}

// lingerAfter has the request's connection linger when it is closed after this answer.
func lingerAfter(c *fiber.Ctx) {
	if lc, ok := c.Context().Conn().(*lingerConn); ok {
		lc.linger.Store(true)
	}
}
