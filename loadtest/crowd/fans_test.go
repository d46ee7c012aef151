package crowd

import (
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
)

// TestFanIsTheSameInAnyShare: fan i of a seeded crowd makes the same choices, draws the same random stream for
// its later ones and arrives at the same time whether one process plays the whole crowd or it falls in any share
// of a split one, so a run over -procs children plays the crowd a single process would.
func TestFanIsTheSameInAnyShare(t *testing.T) {
	sc := loadtest.Scenario{Mode: loadtest.ModeQueue, Fans: 10, Ramp: 9 * time.Second, HotShare: 0.5,
		GroupMin: 1, GroupMax: 4, ProbeShare: 0.3,
		Pay: loadtest.PayMix{OK: 1, DeclinedThenOK: 1, Slow: 1, Error: 1, Abandon: 1}}
	const seed = 42
	type played struct {
		hot, probe bool
		size       int
		pay        loadtest.PayBehaviour
		arrival    time.Duration
		draws      [4]uint64 // the start of the fan's random stream after its first choices
	}
	play := func(cr *Crowd, p *fan) played {
		got := played{hot: p.hot, probe: p.probe, size: p.size, pay: p.f.Pay, arrival: cr.arrival(p.f.ID)}
		for j := range got.draws {
			got.draws[j] = p.rng.Uint64()
		}
		return got
	}
	cr := &Crowd{sc: sc}
	var whole []played
	for _, p := range cr.fans(seed, 0, sc.Fans) {
		whole = append(whole, play(cr, p))
	}
	differ := false
	for i := 1; i < len(whole); i++ {
		differ = differ || whole[i] != whole[0]
	}
	if !differ {
		t.Fatalf("every fan played alike (%+v): the test cannot tell fans apart", whole[0])
	}

	for _, shares := range [][]int{{10}, {5, 5}, {3, 4, 3}, {1, 1, 8}, {9, 1}} {
		first := 0
		for _, count := range shares {
			got := cr.fans(seed, first, count)
			if len(got) != count {
				t.Fatalf("shares %v: fans(%d, %d) made %d fans", shares, first, count, len(got))
			}
			for k, p := range got {
				i := first + k
				if p.f.ID != i {
					t.Fatalf("shares %v: fan %d of the share from %d has id %d, want %d", shares, k, first, p.f.ID, i)
				}
				if g := play(cr, p); g != whole[i] {
					t.Errorf("shares %v: fan %d plays %+v, want %+v as in the whole crowd", shares, i, g, whole[i])
				}
			}
			first += count
		}
	}
}
