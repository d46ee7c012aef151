package booking

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
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

// pickAlternatives is the pure part of alternatives. It runs on every refused hold that misses the memo (several
// thousand a second in a flash crowd, as seats are taken and freed), so it makes one pass over the layout, keeps
// its candidates on the stack, and picks the nearest single seats by insertion instead of sorting them all.
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
	// One pass: the rows are numbered in map order, each wanted seat's row is the first with its label (0 when
	// none has it), and the candidates are the free seats of the category, as small index pairs: a slice of
	// whole seats would be most of the garbage a flash crowd makes.
	type cand struct{ i, row int32 }
	var candBuf [256]cand
	cands := candBuf[:0]
	var rowBuf [16]int32
	wantRows := rowBuf[:0]
	if n > len(rowBuf) {
		wantRows = make([]int32, 0, n)
	}
	for range n {
		wantRows = append(wantRows, -1)
	}
	r := int32(-1)
	for i := range layout {
		st := &layout[i]
		if i == 0 || st.Row != layout[i-1].Row {
			r++
			for k := range wanted {
				if wantRows[k] < 0 && wanted[k].Row == st.Row {
					wantRows[k] = r
				}
			}
		}
		if st.Category == category && free(i) {
			cands = append(cands, cand{int32(i), r})
		}
	}
	var wantRow, wantNum float64
	for k, w := range wanted {
		wantRow += float64(max(wantRows[k], 0))
		wantNum += float64(w.Number)
	}
	wantRow /= float64(n)
	wantNum /= float64(n)
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
	// The n nearest single seats, nearest first, ties in map order: what a stable sort by distance would put
	// first. The chosen are kept in order; a candidate enters only when nearer than the last of them, so an
	// equal distance keeps the earlier seat.
	type near struct {
		c cand
		d float64
	}
	var nearBuf [16]near
	chosen := nearBuf[:0]
	if n > len(nearBuf) {
		chosen = make([]near, 0, n)
	}
	for _, c := range cands {
		d := dist(c.row, float64(num(c)))
		if len(chosen) == n {
			if d >= chosen[n-1].d {
				continue
			}
			chosen = chosen[:n-1]
		}
		at := len(chosen)
		for at > 0 && chosen[at-1].d > d {
			at--
		}
		chosen = slices.Insert(chosen, at, near{c, d})
	}
	for _, e := range chosen {
		out = append(out, layout[e.c.i].ID)
	}
	return out
}

// altMemo maps a request key to the alternatives offered for it, up to maxMemo keys: in a flash crowd the same
// few seat requests are refused over and over, and a crowd of distinct requests must not grow it without end.
//
// base is the memo of an earlier state that had every seat free that this one has (seats were only taken since:
// a claim, a seat event, a reload that found new holds). An answer there still stands here while its seats are
// all still free: the alternatives are a function of the free seats alone, and taking other seats removes only
// candidates that lost to it (pickAlternatives). In a flash crowd seats are taken several hundred times a second,
// and without this each time sent every distinct request back to pickAlternatives.
type altMemo struct {
	m     sync.Map // request key -> *altAnswer
	n     atomic.Int32
	base  *altMemo
	depth int // of the base chain, bounded by maxMemoDepth so a long sell-out does not keep every memo alive
}

// altAnswer is a memoised answer: the seat ids offered and their positions in the layout.
type altAnswer struct {
	ids []string
	at  []int32
}

const (
	maxMemo      = 4096
	maxMemoDepth = 8
)

// after returns a memo for a state reached from the one of m by taking seats only.
func (m *altMemo) after() *altMemo {
	if m.depth >= maxMemoDepth {
		return new(altMemo)
	}
	return &altMemo{base: m, depth: m.depth + 1}
}

// inherit takes over prev's memo of alternatives when the two have the same state, and builds on it when seats
// were only taken since prev.
func (sn *snapshot) inherit(prev *snapshot) {
	switch {
	case prev == nil || len(prev.state) != len(sn.state):
	case slices.Equal(prev.state, sn.state):
		sn.alts = prev.alts
	case !freedSince(prev.state, sn.state):
		sn.alts = prev.alts.after()
	}
}

// freedSince reports whether a seat free in now was taken in before.
func freedSince(before, now []seatState) bool {
	for i, st := range now {
		if st == seatFree && before[i] != seatFree {
			return true
		}
	}
	return false
}

// alternatives returns pickAlternatives on this snapshot, memoised: in a flash crowd the same few seat requests
// are refused over and over against the same snapshot.
func (sn *snapshot) alternatives(layout []Seat, wanted []Seat) []string {
	key := make([]byte, 0, 8*len(wanted))
	for _, w := range wanted {
		key = append(key, w.ID...)
		key = append(key, 0)
	}
	if v, ok := sn.alts.m.Load(string(key)); ok {
		return v.(*altAnswer).ids
	}
	var a *altAnswer
	for m := sn.alts.base; m != nil && a == nil; m = m.base {
		if v, ok := m.m.Load(string(key)); ok {
			if a = v.(*altAnswer); !sn.allFree(a.at) {
				a = nil
				break // an older memo's answer had the same seats, or seats taken longer ago
			}
		}
	}
	if a == nil {
		a = &altAnswer{ids: pickAlternatives(layout, func(i int) bool { return sn.state[i] == seatFree }, wanted)}
		a.at = make([]int32, len(a.ids))
		for i, id := range a.ids {
			a.at[i] = int32(sn.index[id])
		}
	}
	// Load first: past the cap the counter stops moving, so it cannot wrap around on a long-lived memo.
	if sn.alts.n.Load() < maxMemo && sn.alts.n.Add(1) <= maxMemo {
		sn.alts.m.Store(string(key), a)
	}
	return a.ids
}

// allFree reports whether the seats at the layout positions are all free in the snapshot.
func (sn *snapshot) allFree(at []int32) bool {
	for _, i := range at {
		if sn.state[i] != seatFree {
			return false
		}
	}
	return true
}
