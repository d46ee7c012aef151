package loadtest

import (
	"testing"
	"time"
)

func fanAt(id int, admitted time.Duration, obs ...PositionObs) *Fan {
	return &Fan{ID: id, Admitted: true, AdmittedAt: admitted, Positions: obs}
}

func TestCheckFairness(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		fans      []*Fan
		overtaken int
	}{
		{"in order", []*Fan{
			fanAt(0, 3*s, PositionObs{2 * s, 1}),
			fanAt(1, 4*s, PositionObs{2 * s, 2}),
			fanAt(2, 5*s, PositionObs{2 * s, 3}),
		}, 0},
		{"third in line overtaken by three", []*Fan{
			fanAt(0, 3*s, PositionObs{2 * s, 1}),
			fanAt(1, 4*s, PositionObs{2 * s, 2}),
			fanAt(2, 9*s, PositionObs{2 * s, 3}),
			fanAt(3, 6*s, PositionObs{2 * s, 4}),
		}, 1},
		{"same tick within slack is not overtaking", []*Fan{
			fanAt(0, 3*s, PositionObs{2 * s, 1}),
			fanAt(1, 3*s+100*time.Millisecond, PositionObs{2 * s, 5}),
			fanAt(2, 3*s+200*time.Millisecond, PositionObs{2 * s, 9}),
		}, 0},
		{"positions before opening are provisional", []*Fan{
			fanAt(0, 3*s, PositionObs{0, 2}),
			fanAt(1, 4*s, PositionObs{0, 1}),
			fanAt(2, 5*s, PositionObs{0, 3}),
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckFairness(tc.fans, time.Second, 500*time.Millisecond)
			if len(got.Overtaken) != tc.overtaken {
				t.Errorf("got %d overtaken (%+v), want %d", len(got.Overtaken), got.Overtaken, tc.overtaken)
			}
		})
	}
}

func TestSummarisePercentiles(t *testing.T) {
	var ss []Sample
	for i := 1; i <= 100; i++ {
		ss = append(ss, Sample{At: time.Duration(i) * time.Millisecond * 10, Latency: time.Duration(i) * time.Millisecond, Outcome: "201"})
	}
	st := Summarise(ss)
	if st.P50 != 50*time.Millisecond || st.P99 != 99*time.Millisecond || st.Max != 100*time.Millisecond {
		t.Errorf("got p50 %s p99 %s max %s, want 50ms 99ms 100ms", st.P50, st.P99, st.Max)
	}
	if st.Outcomes["201"] != 100 {
		t.Errorf("got outcomes %v, want 201=100", st.Outcomes)
	}
}

func TestParsePayMix(t *testing.T) {
	m, err := ParsePayMix("ok=50,declined=25,abandon=25")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Pick(0.1); got != PayOK {
		t.Errorf("got %s, want ok", got)
	}
	if got := m.Pick(0.6); got != PayDeclinedThenOK {
		t.Errorf("got %s, want declined-then-ok", got)
	}
	if got := m.Pick(0.9); got != PayAbandon {
		t.Errorf("got %s, want abandon", got)
	}
	for _, bad := range []string{"", "ok", "ok=-1", "visa=1", "ok=0"} {
		if _, err := ParsePayMix(bad); err == nil {
			t.Errorf("ParsePayMix(%q): got no error", bad)
		}
	}
}

func TestPresetsAreValid(t *testing.T) {
	for name, sc := range Presets {
		if err := sc.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
}

func TestCheckTickets(t *testing.T) {
	adm := func(id int, ticket, iat int64) *Fan {
		return &Fan{ID: id, Admitted: true, Ticket: ticket, IssuedAt: iat}
	}
	tests := []struct {
		name string
		fans []*Fan
		want int
	}{
		{"in order, ticks share a second", []*Fan{adm(0, 1, 100), adm(1, 2, 100), adm(2, 3, 101), adm(3, 4, 102)}, 0},
		{"unknown tickets are skipped", []*Fan{adm(0, 1, 105), adm(1, 0, 100), adm(2, 3, 106)}, 0},
		{"first in line admitted last", []*Fan{adm(0, 1, 103), adm(1, 2, 100), adm(2, 3, 101)}, 1},
		{"two passed over by one", []*Fan{adm(0, 1, 102), adm(1, 2, 102), adm(2, 3, 100)}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fr Fairness
			checkTickets(tc.fans, &fr)
			if len(fr.Inversions) != tc.want {
				t.Errorf("got %d inversions (%+v), want %d", len(fr.Inversions), fr.Inversions, tc.want)
			}
		})
	}
}
