package waitroom

// Lanes (admission.Lanes; waitroom/redis lays them out as lines of their own, Line.Lane) share a show's
// admission rate by weight. The partitioned tick takes the show's one budget and splits it here between the
// lanes, then merges each lane's lines by arrival order (Lines.Order) for that lane's part.
//
// The split is deficit-weighted fair sharing: each tick, every lane with fans waiting earns its share of the
// budget as credit (its share among the lanes waiting, so an idle lane's share is lent to the others, and an
// idle lane earns and keeps nothing), each place of the budget goes to the lane with the most credit left that
// still has fans to take it, and a lane's credit falls by the fans it admitted. Credit carries over ticks, so a
// lane whose share is a fraction of a fan per tick still gets it over several ticks: over any run of ticks each
// busy lane's admissions stay within about one fan of its share.

// LaneCreditBound bounds a lane's credit (in fans): a lane that could not use its share (its fans gone absent)
// catches up by at most this much, rather than by everything it missed.
const LaneCreditBound = 16

// EarnLanes adds one tick's budget n to the lanes' credit by share, among the lanes with fans waiting; the
// others' credit is dropped. It returns the credit after.
func EarnLanes(n int, shares []float64, waiting []int64, credit []float64) []float64 {
	sum := 0.0
	for i, w := range waiting {
		if w > 0 {
			sum += shares[i]
		}
	}
	out := make([]float64, len(shares))
	for i, w := range waiting {
		if w > 0 && sum > 0 {
			out[i] = credit[i] + float64(n)*shares[i]/sum
		}
	}
	return out
}

// SplitLanes divides n places between lanes: each to the lane with the most credit left (credit less what it was
// given) among those with fans available beyond what they were given.
func SplitLanes(n int, credit []float64, available []int64) []int {
	out := make([]int, len(credit))
	for ; n > 0; n-- {
		best := -1
		for i := range credit {
			if int64(out[i]) >= available[i] {
				continue
			}
			if best < 0 || credit[i]-float64(out[i]) > credit[best]-float64(out[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[best]++
	}
	return out
}

// ChargeLanes takes the fans each lane admitted off its credit, within LaneCreditBound.
func ChargeLanes(credit []float64, admitted []int) []float64 {
	out := make([]float64, len(credit))
	for i, c := range credit {
		out[i] = min(max(c-float64(admitted[i]), -LaneCreditBound), LaneCreditBound)
	}
	return out
}

// Share is the part of the show's admission rate that ticket's lane gets while it waits: its share among the
// lanes with fans waiting (Line.Share), 1 for a show without lanes.
func (l Lines) Share(ticket int64) float64 {
	p, _ := SplitTicket(len(l), ticket)
	if p >= len(l) || l[p].Share <= 0 {
		return 1
	}
	return l[p].Share
}
