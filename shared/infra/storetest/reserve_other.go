//go:build !unix

package storetest

import "net"

// reserve falls back to a port bound and released at once where the socket calls of reserve_unix.go are not
// available: free now, but another socket may take it before the test's server does.
func reserve(t TB, shared bool) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
