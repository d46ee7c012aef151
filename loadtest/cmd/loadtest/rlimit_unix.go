//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// raiseFileLimit lifts the open-file limit towards want: every waiting fan holds an event stream, so a stadium
// crowd needs a descriptor per fan, far above the usual soft limit of 1024. Root may raise the hard limit too.
func raiseFileLimit(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= want {
		return nil
	}
	next := lim
	next.Cur = want
	if next.Max < want {
		next.Max = want
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err == nil {
		return nil
	}
	next = lim
	next.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		return err
	}
	if next.Cur < want {
		return fmt.Errorf("open-file limit is %d, the crowd may need %d (raise it with ulimit -n)", next.Cur, want)
	}
	return nil
}

// fileLimit is the hard open-file limit, the most a process can raise its own to.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Max
}

// peakRSS is a finished child's peak resident set in MB (0 when unknown).
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	return 0
}
