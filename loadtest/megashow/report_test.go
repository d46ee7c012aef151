package megashow

import (
	"strings"
	"testing"
)

// TestReportFindsPlantedViolations: the checks a scaled run must pass find each kind of violation planted in an
// otherwise clean run of four streaming fans who joined 1 s apart, the first two admitted.
func TestReportFindsPlantedViolations(t *testing.T) {
	clean := func() *Report {
		r := &Report{Fans: 10, Streams: 4, WaitingAfterJoins: 10, AdmittedTotal: 2, APIJoinsPerSecond: 1,
			EdgeBytesPerStream: 10_000, RedisBytesPerFan: 300, HeartbeatCPUMicrosPerFanMinute: 20, resumedMs: 9_000}
		for i := range 4 {
			f := FanRecord{ID: i, SentMs: int64(i) * 1000, DoneMs: int64(i)*1000 + 200, JoinPos: i + 1, Pos: i + 1,
				Ticket: int64(i+1)*64 + int64(i%3)}
			if i < 2 {
				f.Admitted, f.AdmittedMs, f.Iat, f.JTI = 1, 10_100, 10, "n1."+string(rune('1'+i))
			}
			r.fans = append(r.fans, f)
		}
		return r
	}
	r := clean()
	r.summarize()
	if len(r.Violations) > 0 {
		t.Fatalf("a clean run: %v", r.Violations)
	}
	if r.AdmitIatP99Ms != 100 || r.AdmittedEvents != 2 || r.FirstAdmittedAfterMs != 1100 {
		t.Errorf("iat p99 %d ms, %d events, first after %d ms: want 100, 2, 1100", r.AdmitIatP99Ms, r.AdmittedEvents, r.FirstAdmittedAfterMs)
	}
	for name, c := range map[string]struct {
		plant func(*Report)
		want  string
	}{
		"admitted twice":   {func(r *Report) { r.fans[0].Admitted = 2 }, "admitted-once"},
		"a jti shared":     {func(r *Report) { r.fans[1].JTI = r.fans[0].JTI }, "admitted-once"},
		"a grant not told": {func(r *Report) { r.AdmittedTotal = 3 }, "admitted-once"},
		"admitted out of line": {func(r *Report) {
			r.fans[3].Admitted, r.fans[3].JTI, r.fans[3].Pos, r.AdmittedTotal = 1, "n2.3", 9, 3
		}, "admitted-in-order"},
		"a position too small": {func(r *Report) { r.fans[3].Pos = 1 }, "positions-honest"},
		"a position too large": {func(r *Report) { r.fans[0].Pos = 3 }, "positions-honest"},
		"a fan never told":     {func(r *Report) { r.fans[2].Pos = 0 }, "positions-honest"},
		"a fan lost":           {func(r *Report) { r.WaitingAfterJoins = 9 }, "joined-once"},
		"a join failed":        {func(r *Report) { r.fans[2].JoinPos = 0 }, "joined-once"},
		"a ticket told twice":  {func(r *Report) { r.fans[2].Ticket = r.fans[1].Ticket }, "joined-once"},
		"no memory figure":     {func(r *Report) { r.RedisBytesPerFan = 0 }, "figures"},
		"no heartbeat figure":  {func(r *Report) { r.HeartbeatCPUMicrosPerFanMinute = -1 }, "figures"},
	} {
		t.Run(name, func(t *testing.T) {
			r := clean()
			c.plant(r)
			r.summarize()
			if got := strings.Join(r.Violations, "; "); !strings.Contains(got, c.want) {
				t.Errorf("violations %q, want one of %s", got, c.want)
			}
		})
	}
}
