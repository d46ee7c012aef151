package booking

import (
	"slices"
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
