//go:build linux || darwin || freebsd || netbsd || openbsd

package http

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const peekSupported = true

// peekAlive reports whether an idle connection is still open: nothing to read yet (EAGAIN). End of stream, an
// error, or bytes the upstream sent unasked (it answers only requests) all mean the connection is done.
func peekAlive(raw syscall.RawConn) bool {
	var buf [1]byte
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		_, _, rerr = unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false
	}
	return rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK
}
