package waitroom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pulse"
	"github.com/flashseat/flashseat/waitroom"
)

func TestTune(t *testing.T) {
	s := admission.DefaultSettings()
	s.AdmitPerSecond = 20
	s.Autotune = admission.Autotune{Enabled: true, MinAdmitPerSecond: 2, MaxAdmitPerSecond: 50, TargetHoldP99Ms: 200}
	now := time.Now()
	healthy := pulse.Report{At: now, HoldP99Ms: 50, Holds: 100, Requests: 1000, Breaker: "closed"}
	with := func(f func(*pulse.Report)) pulse.Report { r := healthy; f(&r); return r }
	for name, c := range map[string]struct {
		rate   float64
		report pulse.Report
		seats  int64
		known  bool
		want   float64
		reason string
	}{
		"healthy raises":        {20, healthy, 0, false, 25, "raising"},
		"raises at least one":   {2, healthy, 0, false, 3, "raising"},
		"never above max":       {48, healthy, 0, false, 50, "raising"},
		"slow holds lower":      {20, with(func(r *pulse.Report) { r.HoldP99Ms = 400 }), 0, false, 10, "over the 200 ms target"},
		"very slow halves only": {20, with(func(r *pulse.Report) { r.HoldP99Ms = 4000 }), 0, false, 10, "lowering"},
		"never under min":       {3, with(func(r *pulse.Report) { r.HoldP99Ms = 4000 }), 0, false, 2, "lowering"},
		"near target holds":     {20, with(func(r *pulse.Report) { r.HoldP99Ms = 180 }), 0, false, 20, "holding"},
		"5xx halve":             {20, with(func(r *pulse.Report) { r.Errors5xx, r.Unavailable = 50, 40 }), 0, false, 10, "5xx (40 of them 503)"},
		"breaker open halves":   {20, with(func(r *pulse.Report) { r.Breaker = "open" }), 0, false, 10, "breaker open"},
		"seats cap":             {20, healthy, 100, true, 10, "100 seats left"},
		"sold out: the minimum": {20, healthy, 0, true, 2, "0 seats left"},
		"no report holds":       {20, pulse.Report{}, 0, false, 20, "no report"},
	} {
		t.Run(name, func(t *testing.T) {
			s := s
			s.AdmitPerSecond = c.rate
			got, reason := waitroom.Tune(s, c.report, c.seats, c.known)
			if got != c.want || !strings.Contains(reason, c.reason) {
				t.Fatalf("got %g %q, want %g and a reason with %q", got, reason, c.want, c.reason)
			}
		})
	}
}
