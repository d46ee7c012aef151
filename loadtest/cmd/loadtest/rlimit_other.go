//go:build !unix

package main

import "os"

// raiseFileLimit has nothing to raise where there is no RLIMIT_NOFILE.
func raiseFileLimit(uint64) error { return nil }

// fileLimit is unknown (0) there.
func fileLimit() uint64 { return 0 }

// peakRSS is unknown (0) there.
func peakRSS(*os.ProcessState) int64 { return 0 }
