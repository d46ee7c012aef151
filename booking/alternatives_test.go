package booking

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestPickAlternatives(t *testing.T) {
	t.Parallel()
	var layout []Seat
	for _, r := range []struct {
		row string
		cat string
	}{{"A", "SILVER"}, {"B", "GOLD"}, {"C", "GOLD"}} {
		for n := 1; n <= 6; n++ {
			layout = append(layout, Seat{ID: SeatID(r.row, n), Row: r.row, Number: n, Category: r.cat})
		}
	}
	byID := map[string]Seat{}
	for _, s := range layout {
		byID[s.ID] = s
	}
	seats := func(ids ...string) []Seat {
		out := make([]Seat, len(ids))
		for i, id := range ids {
			out[i] = byID[id]
		}
		return out
	}
	taken := func(ids ...string) func(string) bool {
		return func(id string) bool { return !slices.Contains(ids, id) }
	}
	tests := []struct {
		name   string
		free   func(string) bool
		wanted []Seat
		want   []string
	}{
		{"adjacent pair in the same row", taken("B3", "B4"), seats("B3", "B4"), []string{"B1", "B2"}},
		{"same category only", taken("A1", "A2", "A3", "A4", "A5"), seats("A5", "A6"), []string{}},
		{"next row when the row is full", taken("B1", "B2", "B3", "B4", "B5", "B6"), seats("B2", "B3"), []string{"C2", "C3"}},
		{"nearest singles when no run", taken("B1", "B3", "B5", "C1", "C3", "C5"), seats("B3", "B5"), []string{"B4", "B2"}},
		{"the free one of the request is reused", taken("C4"), seats("C4", "C5"), []string{"C5", "C6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			free := func(i int) bool { return tc.free(layout[i].ID) }
			if got := pickAlternatives(layout, free, tc.wanted); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPickAlternativesAsSorted: pickAlternatives answers as the plain version does (every row listed, every
// candidate sorted by distance) on random halls, free seats and requests, runs and the nearest singles alike.
func TestPickAlternativesAsSorted(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	cats := []string{"GOLD", "SILVER", "PLATINUM"}
	for trial := range 3000 {
		var layout []Seat
		for r := range 1 + rng.IntN(8) {
			row := string(rune('A' + r))
			if rng.IntN(10) == 0 && r > 1 && layout[len(layout)-1].Row != "A" {
				row = "A" // a label used twice, apart
			}
			for n := 1; n <= 1+rng.IntN(12); n++ {
				layout = append(layout, Seat{ID: fmt.Sprint(row, r, "-", n), Row: row, Number: n, Category: cats[rng.IntN(len(cats))]})
			}
		}
		share := rng.Float64()
		freeSet := make([]bool, len(layout))
		for i := range freeSet {
			freeSet[i] = rng.Float64() < share
		}
		free := func(i int) bool { return freeSet[i] }
		wanted := make([]Seat, 1+rng.IntN(4))
		for i := range wanted {
			wanted[i] = layout[rng.IntN(len(layout))]
		}
		if rng.IntN(20) == 0 {
			wanted[0].Row = "Z" // a row the layout does not have
		}
		got, want := pickAlternatives(layout, free, wanted), pickAlternativesSorted(layout, free, wanted)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: got %v, want %v (wanted %v)", trial, got, want, wanted)
		}
	}
}

// pickAlternativesSorted makes pickAlternatives' choice the plain way, as the reference it must agree with:
// maps for the category and the rows, every run looked for seat by seat in the layout, every candidate sorted.
// Rows are numbered 1, 2, 3… as the random halls are.
func pickAlternativesSorted(layout []Seat, free func(i int) bool, wanted []Seat) []string {
	n := len(wanted)
	count := map[string]int{}
	for _, w := range wanted {
		count[w.Category]++
	}
	category := ""
	for c, k := range count {
		if k > count[category] || k == count[category] && c < category {
			category = c
		}
	}
	rowOf, rowAt := map[string]int{}, make([]int, len(layout))
	for i, r := 0, -1; i < len(layout); i++ {
		if i == 0 || layout[i].Row != layout[i-1].Row {
			r++
			if _, ok := rowOf[layout[i].Row]; !ok {
				rowOf[layout[i].Row] = r
			}
		}
		rowAt[i] = r
	}
	var wantRow, wantNum float64
	for _, w := range wanted {
		wantRow += float64(rowOf[w.Row])
		wantNum += float64(w.Number)
	}
	wantRow, wantNum = wantRow/float64(n), wantNum/float64(n)
	ok := func(i int) bool { return layout[i].Category == category && free(i) }
	var cands []int
	for i := range layout {
		if ok(i) {
			cands = append(cands, i)
		}
	}
	if len(cands) < n {
		return []string{}
	}
	dist := func(i int, num float64) float64 {
		return math.Abs(float64(rowAt[i])-wantRow)*100 + math.Abs(num-wantNum)
	}
	var out []string
	bestD := math.Inf(1)
	for _, s := range cands {
		run := s+n <= len(layout)
		for k := 1; run && k < n; k++ {
			run = ok(s+k) && rowAt[s+k] == rowAt[s] && layout[s+k].Number == layout[s].Number+k
		}
		if d := dist(s, float64(2*layout[s].Number+n-1)/2); run && d < bestD {
			bestD, out = d, nil
			for k := range n {
				out = append(out, layout[s+k].ID)
			}
		}
	}
	if out != nil {
		return out
	}
	sort.SliceStable(cands, func(a, b int) bool {
		return dist(cands[a], float64(layout[cands[a]].Number)) < dist(cands[b], float64(layout[cands[b]].Number))
	})
	for _, i := range cands[:n] {
		out = append(out, layout[i].ID)
	}
	return out
}

// BenchmarkPickAlternatives is one miss of the alternatives' memo on the demo hall (10 rows of 20, the hot pair
// in row E): with runs of free seats about, and with no two adjacent seats free (the nearest singles).
//
//	go test -run '^$' -bench PickAlternatives -benchmem ./booking/
func BenchmarkPickAlternatives(b *testing.B) {
	cats := map[byte]string{'A': "SILVER", 'B': "SILVER", 'C': "SILVER", 'I': "PLATINUM", 'J': "PLATINUM"}
	var layout []Seat
	for _, r := range []byte("ABCDEFGHIJ") {
		for n := 1; n <= 20; n++ {
			layout = append(layout, Seat{ID: SeatID(string(r), n), Row: string(r), Number: n,
				Category: cmp.Or(cats[r], "GOLD")})
		}
	}
	wanted := []Seat{layout[84], layout[85]}
	for _, tc := range []struct {
		name string
		free func(i int) bool
	}{{"runs", func(i int) bool { return i%7 < 2 }}, {"singles", func(i int) bool { return i%3 == 0 }}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pickAlternatives(layout, tc.free, wanted)
			}
		})
	}
}
