//go:build !unix

package storetest

// reserve falls back to a port released at once where the socket calls of reserve_unix.go are not available.
func reserve(t TB) (string, error) { return FreeAddr(t), nil }
