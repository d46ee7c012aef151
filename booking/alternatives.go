package booking

import (
	"context"
	"math"
	"sort"
)

// alternatives proposes, after a conflict, as many free seats as were asked for, of the category most of them
// had, as close to them as possible: a run of adjacent seats in one row if any row has one, the nearest single
// seats otherwise. It reads the live status once; an error or too few free seats yields none.
func (s *Holds) alternatives(ctx context.Context, showID string, wanted []Seat) []string {
	layout, err := s.catalog.Layout(ctx, showID)
	if err != nil {
		return []string{}
	}
	sn, err := s.seats.snapshot(ctx, showID, layout, alternativesMaxAge)
	if err != nil || sn == nil {
		return []string{}
	}
	return sn.alternatives(layout, wanted)
}

// pickAlternatives is the pure part of alternatives. It runs on every refused hold that misses the memo, so it
// avoids maps: layouts are small and in row order.
func pickAlternatives(layout []Seat, free func(i int) bool, wanted []Seat) []string {
	n := len(wanted)
	if n == 0 {
		return []string{}
	}
	// The category most of the wanted seats have (ties: the smallest name).
	category, best := "", 0
	for _, w := range wanted {
		c := 0
		for _, v := range wanted {
			if v.Category == w.Category {
				c++
			}
		}
		if c > best || (c == best && w.Category < category) {
			category, best = w.Category, c
		}
	}
	// Row positions, in map order.
	var rows []string
	for i, st := range layout {
		if i == 0 || st.Row != layout[i-1].Row {
			rows = append(rows, st.Row)
		}
	}
	rowOf := func(label string) int {
		for i, r := range rows {
			if r == label {
				return i
			}
		}
		return 0
	}
	var wantRow, wantNum float64
	for _, w := range wanted {
		wantRow += float64(rowOf(w.Row))
		wantNum += float64(w.Number)
	}
	wantRow /= float64(n)
	wantNum /= float64(n)

	// Candidates as small index pairs: this runs for every refused request that misses the memo, and a slice
	// of whole seats would be most of the garbage a flash crowd makes.
	type cand struct{ i, row int32 }
	cands := make([]cand, 0, 64)
	r := int32(-1)
	for i, st := range layout {
		if i == 0 || st.Row != layout[i-1].Row {
			r++
		}
		if st.Category == category && free(i) {
			cands = append(cands, cand{int32(i), r})
		}
	}
	num := func(c cand) int { return layout[c.i].Number }
	if len(cands) < n {
		return []string{}
	}
	dist := func(row int32, num float64) float64 {
		return math.Abs(float64(row)-wantRow)*100 + math.Abs(num-wantNum)
	}
	// Adjacent runs: candidates are in map order (row by row, left to right), so a run is a stretch of one row
	// with consecutive numbers.
	bestAt, bestD := -1, math.Inf(1)
	for i := 0; i+n <= len(cands); i++ {
		first, last := cands[i], cands[i+n-1]
		if first.row != last.row || num(last)-num(first) != n-1 {
			continue
		}
		if d := dist(first.row, float64(num(first)+num(last))/2); d < bestD {
			bestAt, bestD = i, d
		}
	}
	out := make([]string, 0, n)
	if bestAt >= 0 {
		for _, c := range cands[bestAt : bestAt+n] {
			out = append(out, layout[c.i].ID)
		}
		return out
	}
	sort.SliceStable(cands, func(i, j int) bool {
		return dist(cands[i].row, float64(num(cands[i]))) < dist(cands[j].row, float64(num(cands[j])))
	})
	for _, c := range cands[:n] {
		out = append(out, layout[c.i].ID)
	}
	return out
}
