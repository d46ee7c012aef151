//go:build unix

package storetest

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// reserve binds a TCP socket to a loopback port the kernel chooses and keeps it bound, not listening, until the
// test ends. Without SO_REUSEADDR no other socket may bind the port, nor does the kernel hand it out to another
// listener on port 0; a connection to it is refused, as to a port nobody holds.
func reserve(t TB) (string, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("reserve a port: %w", err)
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
