// Package store is what every service agrees a store outage is: ErrUnavailable, the failure a client should wait
// out (503 with Retry-After) as opposed to a bug or a bad request, which each service's error table maps to its
// store-unavailable problem; and the readiness probe's checks. It imports only the standard library, so the
// domains may use it; telling which driver errors mean an outage is store/driver's job.
package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnavailable is a store (PostgreSQL or Redis) that cannot be reached or cannot serve right now: down,
// restarting, loading its data, or out of connections. Retrying later may succeed.
var ErrUnavailable = errors.New("store unavailable")

// Check is one dependency a readiness probe pings (a store, or an upstream the service forwards to).
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Probe pings every check and reports each one's state, "ok" or "unavailable", with the failures joined (nil
// when all answered). Readiness handlers answer 503 with this map when the error is not nil.
func Probe(ctx context.Context, checks []Check) (map[string]string, error) {
	states := make(map[string]string, len(checks))
	var errs []error
	for _, ch := range checks {
		if err := ch.Ping(ctx); err != nil {
			states[ch.Name] = "unavailable"
			errs = append(errs, fmt.Errorf("%s: %w", ch.Name, err))
			continue
		}
		states[ch.Name] = "ok"
	}
	return states, errors.Join(errs...)
}
