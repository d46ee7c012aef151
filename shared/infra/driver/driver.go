// Package driver knows the store drivers every service uses, pgx and go-redis: it opens the Redis client, and it
// tells a driver error that means the store is unreachable (wrapped with store.ErrUnavailable) from one that means
// the store refused the command. It is apart from package store so that the domains, which need only
// store.ErrUnavailable, do not depend on the drivers.
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/store"
)

// Classify returns err wrapped with store.ErrUnavailable when it means a store is unreachable, and err unchanged
// otherwise (nil stays nil). The original error stays in the chain for errors.Is/As and for the log.
func Classify(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !Unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// Unavailable reports whether err means the store is unreachable rather than that it refused the command.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	// A client whose request was cancelled went away; nothing is wrong with the store.
	if errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgUnavailable(pgErr.Code)
	}
	var redisErr goredis.Error
	if errors.As(err, &redisErr) && redisReplyUnavailable(redisErr) {
		return true
	}
	if redisGarbled(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr):
		return true
	case pgconn.Timeout(err), errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, puddle.ErrClosedPool):
		return true
	case errors.Is(err, goredis.ErrClosed), errors.Is(err, goredis.ErrPoolTimeout), errors.Is(err, goredis.ErrPoolExhausted):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		// The server closed the connection under us (a restart, pg_terminate_backend, a killed Redis).
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// A store call ran out of time: a pool that could not hand out a connection, or a server not answering.
		return true
	}
	return false
}

// pgUnavailable tells the SQLSTATEs of a server that cannot serve now from those of a refused statement:
// class 08 (connection exception), 57P01-57P05 (terminated by an administrator, crash, starting up, shutting
// down), 53300 (too many connections), 58000/58030 (system and I/O errors).
func pgUnavailable(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"):
		return true
	case code == "57P01", code == "57P02", code == "57P03", code == "57P04", code == "57P05":
		return true
	case code == "53300", code == "58000", code == "58030":
		return true
	}
	return false
}

// redisGarbled reports whether err, or an error it wraps, is go-redis failing to read a reply at all: the address
// answers in another protocol (a REDIS_URL naming the wrong service, a TLS port spoken to in plain text, an HTTP
// server that took a port Redis left), so the store cannot serve, as when it is down. go-redis makes these with
// fmt.Errorf and no type of their own; their messages begin so (internal/proto's reader), and a reply Redis did
// send (goredis.Error) is never one of them.
func redisGarbled(err error) bool {
	if _, reply := err.(goredis.Error); !reply {
		if msg := err.Error(); strings.HasPrefix(msg, "redis: can't parse") || strings.HasPrefix(msg, "redis: invalid reply") {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return redisGarbled(next)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if redisGarbled(next) {
				return true
			}
		}
	}
	return false
}

// redisReplyUnavailable tells the error replies of a Redis that cannot serve now (loading its dataset after a
// restart, a primary gone, a cluster re-forming) from those of a refused command (WRONGTYPE, a Lua error).
func redisReplyUnavailable(err goredis.Error) bool {
	if goredis.IsLoadingError(err) || goredis.IsMasterDownError(err) || goredis.IsTryAgainError(err) ||
		goredis.IsClusterDownError(err) || goredis.IsReadOnlyError(err) {
		return true
	}
	// The cluster client follows MOVED and ASK itself, up to its redirect limit: one that reaches us means the
	// slot was still moving after those (a failover or a resharding under way), which a retry soon gets past.
	if _, moved := goredis.IsMovedError(err); moved {
		return true
	}
	if _, ask := goredis.IsAskError(err); ask {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "BUSY ") || strings.HasPrefix(msg, "MISCONF ")
}
