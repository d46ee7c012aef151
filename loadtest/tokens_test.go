package loadtest

import (
	"slices"
	"testing"
)

// A probe the gate answered for is either refused (401/403) or let through (anything else it answered); an answer
// that carries no verdict, such as an overloaded edge's 408 before any handler ran, counts as neither. The stadium
// at full size met 408s on probes, and they used to be counted as let through.
func TestCheckTokensProbes(t *testing.T) {
	fans := []*Fan{
		{ID: 1, Probes: []Probe{{Status: 401}, {Status: 403}}},
		{ID: 2, Probes: []Probe{{Status: 0}, {Status: 408}, {Status: 429}, {Status: 502}, {Status: 503}}},
		{ID: 3, Probes: []Probe{{Status: 403}, {Status: 200}}},
		{ID: 4, Probes: []Probe{{Status: 409}}},
	}
	got := CheckTokens(fans)
	if got.Probes != 10 || got.Unclear != 5 {
		t.Errorf("probes %d, unclear %d; want 10 and 5", got.Probes, got.Unclear)
	}
	if !slices.Equal(got.Allowed, []int{3, 4}) {
		t.Errorf("let through %v, want fans 3 and 4", got.Allowed)
	}
}

func TestCheckTokensAdmitted(t *testing.T) {
	fans := []*Fan{
		{ID: 1, Admitted: true, TokenStatus: 200},
		{ID: 2, Admitted: true, TokenStatus: 403, TokenLate: true},
		{ID: 3, Admitted: true, TokenStatus: 403, TokenRefusal: "hold: 403 queue-required (revoked)"},
		{ID: 4, Admitted: true},
	}
	got := CheckTokens(fans)
	if got.Admitted != 4 || got.Used != 3 || got.Accepted != 1 || got.ExpiredFirst != 1 || !slices.Equal(got.Refused, []int{3}) {
		t.Errorf("got %+v", got)
	}
	// The violation says who refused the fan and why, which the stadium's refusals needed and lacked.
	vs := tokenViolations(&Summary{Tokens: got})
	if len(vs) != 1 || vs[0].Detail != "fan 3: its admission token was refused (hold: 403 queue-required (revoked))" {
		t.Errorf("violations %+v", vs)
	}
}
