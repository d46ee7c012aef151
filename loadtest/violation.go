package loadtest

import (
	"fmt"
	"time"
)

// Invariant names, shared by the crowd's own checks and the store checker.
const (
	InvSeatSoldTwice     = "seat-sold-twice"
	InvSoldMatchesLedger = "sold-seats-match-confirmed"
	InvPayments          = "payments"
	InvStaleHold         = "stale-hold"
	InvLocks             = "redis-locks"
	InvQueueOrder        = "queue-order"
	InvTokenAccepted     = "admitted-token-accepted"
	InvUnadmittedRefused = "unadmitted-refused"
)

// Violation is one broken invariant, with enough detail to find the rows or fans involved.
type Violation struct {
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
}

// CrowdViolations are the invariants only the crowd can judge, from what its fans saw: admission in queue order,
// every admitted fan's token accepted, every unadmitted request refused.
func CrowdViolations(s *Summary) []Violation {
	var out []Violation
	if s.Scenario.Mode != ModeQueue {
		return nil
	}
	for _, o := range s.Fairness.Overtaken {
		out = append(out, Violation{InvQueueOrder, fmt.Sprintf(
			"fan %d was at position %d at +%s, yet %d other fans were admitted before it after that",
			o.Fan, o.Position, o.At.Round(time.Millisecond), o.Admitted)})
	}
	for _, id := range s.Tokens.Refused {
		out = append(out, Violation{InvTokenAccepted, fmt.Sprintf("fan %d: its admission token was refused", id)})
	}
	for _, id := range s.Tokens.Allowed {
		out = append(out, Violation{InvUnadmittedRefused, fmt.Sprintf(
			"fan %d: a booking route answered 2xx to a request without a valid admission token", id)})
	}
	return out
}
