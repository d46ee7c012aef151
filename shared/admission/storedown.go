package admission

import (
	"errors"
	"fmt"
)

// What a show's queue does while its store (the queue's Redis) cannot be reached.
const (
	// StoreDownClosed: nobody is admitted; joins answer 503 with Retry-After and the gated routes stay shut
	// until the store is back. The default: the line's order is kept exactly.
	StoreDownClosed = "closed"
	// StoreDownTrickle: each edge replica alone admits fans at StoreDown.AdmitPerSecond (a token bucket of its
	// own, so N replicas admit N times the rate), with admission tokens recorded and signed as any other.
	StoreDownTrickle = "trickle"
)

// maxTrickle bounds the trickle's rate per replica: a fail-open is a trickle, not a second front door.
const maxTrickle = 1000

// StoreDown is an operator's choice for a show's queue while its store is down: keep it closed, or let a trickle
// of fans through. While the store is down the trickle orders nobody: whoever asks when a token is free is
// admitted, so the order of the line is given up for the outage in exchange for a sale that keeps moving.
type StoreDown struct {
	Policy         string  `json:"policy"`
	AdmitPerSecond float64 `json:"admitPerSecond"`
}

// DefaultStoreDown is closed, with the rate an operator switching to trickle starts from.
func DefaultStoreDown() StoreDown { return StoreDown{Policy: StoreDownClosed, AdmitPerSecond: 1} }

// Trickle reports the per-replica rate at which fans are admitted while the store is down; ok is false when the
// policy is closed.
func (d StoreDown) Trickle() (perSecond float64, ok bool) {
	return d.AdmitPerSecond, d.Policy == StoreDownTrickle && d.AdmitPerSecond > 0
}

// Validate rejects a policy no queue knows and a rate out of bounds; each error names its field.
func (d StoreDown) Validate() error {
	switch {
	case d.Policy != StoreDownClosed && d.Policy != StoreDownTrickle:
		return fmt.Errorf("whenStoreDown.policy must be %q or %q", StoreDownClosed, StoreDownTrickle)
	case !(d.AdmitPerSecond > 0 && d.AdmitPerSecond <= maxTrickle): // NaN fails too
		return errors.New("whenStoreDown.admitPerSecond must be in (0, 1000]")
	}
	return nil
}
