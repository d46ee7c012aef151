package booking

import (
	"context"
	"math"
	"sort"
)

// alternatives proposes, after a conflict, as many free seats as were asked for, of the category most of them
// had, as close to them as possible: a run of adjacent seats in one row if any row has one, the nearest single
// seats otherwise. It reads the live status once; an error or too few free seats yields none.
func (s *Service) alternatives(ctx context.Context, showID string, wanted []Seat) []string {
	layout, err := s.Layout(ctx, showID)
	if err != nil {
		return []string{}
	}
	sn, err := s.snapshot(ctx, showID, layout, alternativesMaxAge)
	if err != nil || sn == nil {
		return []string{}
	}
	return sn.alternatives(layout, wanted)
}

// pickAlternatives is the pure part of alternatives.
func pickAlternatives(layout []Seat, free func(id string) bool, wanted []Seat) []string {
	n := len(wanted)
	if n == 0 {
		return []string{}
	}
	count := map[string]int{}
	category := ""
	for _, w := range wanted {
		count[w.Category]++
		if count[w.Category] > count[category] || (count[w.Category] == count[category] && w.Category < category) {
			category = w.Category
		}
	}
	rowIndex := map[string]int{}
	for _, st := range layout {
		if _, ok := rowIndex[st.Row]; !ok {
			rowIndex[st.Row] = len(rowIndex)
		}
	}
	var wantRow, wantNum float64
	for _, w := range wanted {
		wantRow += float64(rowIndex[w.Row])
		wantNum += float64(w.Number)
	}
	wantRow /= float64(n)
	wantNum /= float64(n)
	dist := func(row string, num float64) float64 {
		return math.Abs(float64(rowIndex[row])-wantRow)*100 + math.Abs(num-wantNum)
	}

	var cands []Seat
	for _, st := range layout {
		if st.Category == category && free(st.ID) {
			cands = append(cands, st)
		}
	}
	if len(cands) < n {
		return []string{}
	}
	// Adjacent runs: candidates are in map order (row by row, left to right), so a run is a stretch of one row
	// with consecutive numbers.
	best, bestD := -1, math.Inf(1)
	for i := 0; i+n <= len(cands); i++ {
		first, last := cands[i], cands[i+n-1]
		if first.Row != last.Row || last.Number-first.Number != n-1 {
			continue
		}
		if d := dist(first.Row, float64(first.Number+last.Number)/2); d < bestD {
			best, bestD = i, d
		}
	}
	out := make([]string, 0, n)
	if best >= 0 {
		for _, st := range cands[best : best+n] {
			out = append(out, st.ID)
		}
		return out
	}
	sort.SliceStable(cands, func(i, j int) bool {
		return dist(cands[i].Row, float64(cands[i].Number)) < dist(cands[j].Row, float64(cands[j].Number))
	})
	for _, st := range cands[:n] {
		out = append(out, st.ID)
	}
	return out
}
