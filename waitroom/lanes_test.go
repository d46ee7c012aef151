package waitroom_test

import (
	"math"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

// TestSplitLanes: the tick's split of its budget between lanes, tick after tick as the store runs it (earn, split,
// charge), over 200 admissions: busy lanes get their shares within a fan whatever the budget per tick (a fraction
// of a fan for the smallest lane included); a lane with nobody waiting earns nothing and its share goes to the
// others; a lane with fewer fans than its share takes what it has and lends the rest.
func TestSplitLanes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		perTick int
		shares  []float64
		waiting []int64
		want    []int
	}{
		{"one a tick", 1, []float64{0.7, 0.3}, []int64{1000, 1000}, []int{140, 60}},
		{"seven a tick", 7, []float64{0.7, 0.3}, []int64{1000, 1000}, []int{140, 60}},
		{"three lanes", 3, []float64{0.5, 0.3, 0.2}, []int64{1000, 1000, 1000}, []int{100, 60, 40}},
		{"an idle lane lends", 10, []float64{0.7, 0.3}, []int64{0, 1000}, []int{0, 200}},
		{"a short lane", 10, []float64{0.7, 0.3}, []int64{20, 1000}, []int{20, 180}},
		{"nobody", 10, []float64{0.7, 0.3}, []int64{0, 0}, []int{0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			waiting := append([]int64(nil), c.waiting...)
			credit := make([]float64, len(c.shares))
			got := make([]int, len(c.shares))
			for total := 0; total < 200; {
				credit = waitroom.EarnLanes(c.perTick, c.shares, waiting, credit)
				alloc := waitroom.SplitLanes(min(c.perTick, 200-total), credit, waiting)
				sum := 0
				for i, a := range alloc {
					got[i] += a
					waiting[i] -= int64(a)
					sum += a
				}
				credit = waitroom.ChargeLanes(credit, alloc)
				if sum == 0 {
					break
				}
				total += sum
			}
			for i := range got {
				if math.Abs(float64(got[i]-c.want[i])) > 1 {
					t.Fatalf("admitted %v over 200, want %v within a fan", got, c.want)
				}
			}
		})
	}
}

// TestLinesShare: a ticket's lane's part of the rate, for its ETA; the whole rate without lanes.
func TestLinesShare(t *testing.T) {
	t.Parallel()
	ls := waitroom.Lines{{Lane: 0, Share: 0.7}, {Lane: 1, Share: 0.3}}
	if got := ls.Share(waitroom.Ticket(2, 1, 5)); got != 0.3 {
		t.Errorf("the general lane's ticket: %v, want 0.3", got)
	}
	if got := (waitroom.Lines{{}, {}}).Share(waitroom.Ticket(2, 1, 5)); got != 1 {
		t.Errorf("no lanes: %v, want 1", got)
	}
}
