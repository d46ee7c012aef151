//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package http

import "syscall"

const peekSupported = false

func peekAlive(syscall.RawConn) bool { return true }
