// Package listener opens the services' public TCP listeners so that running out of file descriptors pauses
// accepting instead of ending the server.
//
// fasthttp's server (under fiber) stops for good at the first accept error that is not a timeout. In a flash crowd
// the likeliest such error is EMFILE: every held waiting-room stream is a descriptor, and a process that reaches its
// open-file limit then fails accept(2). That used to end the edge, dropping every fan's stream at once, when a
// moment later some connections would have closed and freed room. A Listener waits and tries again, as net/http's
// server does (5 ms, doubling, at most 1 s), and logs the pause at most once a second; connections already open go
// on being served meanwhile, and the kernel keeps new ones in the listen backlog until there is room.
package listener

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// Listen listens on the TCP address addr.
func Listen(addr string, log *slog.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Listener{Listener: ln, log: log}, nil
}

// Listener is a net.Listener whose Accept outlasts a shortage of descriptors or kernel memory.
type Listener struct {
	net.Listener
	log *slog.Logger
	// Only Accept's goroutine touches these.
	paused  int64 // accept errors waited out so far
	lastLog time.Time
}

// Accept waits for the next connection. An error of exhausted resources is waited out; any other error (the
// listener closed) is returned.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || !exhausted(err) {
			return c, err
		}
		l.paused++
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		if l.log != nil && time.Since(l.lastLog) >= time.Second {
			l.lastLog = time.Now()
			l.log.Warn("accept paused: out of resources; new connections wait in the backlog",
				"err", err, "retryIn", delay.String(), "pausedSoFar", l.paused)
		}
		time.Sleep(delay)
	}
}

// exhausted reports whether err is accept(2) running out of something that frees itself as connections close:
// descriptors of the process or the system, buffer or kernel memory, or a connection reset before it was taken.
func exhausted(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
