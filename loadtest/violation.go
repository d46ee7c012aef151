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
	if s.Fairness.Tickets > 0 {
		// Tickets and token times are known: the exact check decides, and the timing heuristic only informs.
		for _, v := range s.Fairness.Inversions {
			rejoined := ""
			if v.Rejoined {
				rejoined = " (it had joined again: the waiting room had forgotten it)"
			}
			out = append(out, Violation{InvQueueOrder, fmt.Sprintf(
				"fan %d (ticket %d) was admitted at %s, after fan %d (ticket %d, behind it) at %s%s", v.Fan, v.Ticket,
				time.Unix(v.IssuedAt, 0).UTC().Format(time.TimeOnly), v.Overtaker, v.OvertakerTicket,
				time.Unix(v.OverAt, 0).UTC().Format(time.TimeOnly), rejoined)})
		}
		return append(out, tokenViolations(s)...)
	}
	for _, o := range s.Fairness.Overtaken {
		out = append(out, Violation{InvQueueOrder, fmt.Sprintf(
			"fan %d was at position %d at +%s, yet %d other fans were admitted before it after that",
			o.Fan, o.Position, o.At.Round(time.Millisecond), o.Admitted)})
	}
	return append(out, tokenViolations(s)...)
}

func tokenViolations(s *Summary) []Violation {
	var out []Violation
	for _, id := range s.Tokens.Refused {
		detail := fmt.Sprintf("fan %d: its admission token was refused", id)
		if why := s.Tokens.RefusedWhy[id]; why != "" {
			detail += " (" + why + ")"
		}
		out = append(out, Violation{InvTokenAccepted, detail})
	}
	for _, id := range s.Tokens.Allowed {
		out = append(out, Violation{InvUnadmittedRefused, fmt.Sprintf(
			"fan %d: a booking route answered a request without a valid admission token with neither 401 nor 403", id)})
	}
	return out
}
