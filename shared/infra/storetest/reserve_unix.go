//go:build unix

package storetest

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// reserve binds a TCP socket to a loopback port the kernel chooses and keeps it bound, not listening, until the
// test ends; a connection to it is refused, as to a port nobody holds. While it is bound the kernel hands the port
// to no other socket on port 0, listening or connecting. Without shared, no other socket may bind it at all. With
// shared (SO_REUSEADDR), a server that sets SO_REUSEADDR too may listen on it, and again after a restart: Linux
// lets sockets that all set it share a port as long as at most one listens. Go's listeners set it, as do
// redis-server, PostgreSQL and nginx.
func reserve(t TB, shared bool) (string, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("reserve a port: %w", err)
	}
	if shared {
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
			syscall.Close(fd)
			return "", fmt.Errorf("reserve a port: %w", err)
		}
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", fmt.Errorf("reserve a port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	in, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return "", fmt.Errorf("reserve a port: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in.Port)), nil
}
