//go:build !unix

package main

// raiseFileLimit has nothing to raise where there is no RLIMIT_NOFILE.
func raiseFileLimit(uint64) error { return nil }
