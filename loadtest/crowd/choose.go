package crowd

import (
	"math/rand/v2"
	"sort"

	"github.com/flashseat/flashseat/loadtest/client"
)

// rank orders seats from most to least wanted: dearest category first, then nearest the row's centre, then the
// row nearest the screen within the category. Every fan ranks alike, which is what makes the hot share collide.
func rank(seats []client.Seat) []client.Seat {
	rowLen := map[string]int{}
	for _, s := range seats {
		if s.Number > rowLen[s.Row] {
			rowLen[s.Row] = s.Number
		}
	}
	out := append([]client.Seat(nil), seats...)
	centre := func(s client.Seat) float64 {
		d := float64(s.Number) - float64(rowLen[s.Row]+1)/2
		if d < 0 {
			d = -d
		}
		return d
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Price != b.Price {
			return a.Price > b.Price
		}
		if ca, cb := centre(a), centre(b); ca != cb {
			return ca < cb
		}
		if len(a.Row) != len(b.Row) {
			return len(a.Row) < len(b.Row)
		}
		return a.Row < b.Row
	})
	return out
}

// available keeps the seats the map shows as AVAILABLE.
func available(seats []client.Seat) []client.Seat {
	out := make([]client.Seat, 0, len(seats))
	for _, s := range seats {
		if s.Status == "AVAILABLE" {
			out = append(out, s)
		}
	}
	return out
}

// blocks lists every run of n side-by-side seats in one row among seats.
func blocks(seats []client.Seat, n int) [][]client.Seat {
	byRow := map[string]map[int]client.Seat{}
	for _, s := range seats {
		if byRow[s.Row] == nil {
			byRow[s.Row] = map[int]client.Seat{}
		}
		byRow[s.Row][s.Number] = s
	}
	var out [][]client.Seat
	for _, row := range byRow {
		for num := range row {
			blk := make([]client.Seat, 0, n)
			for k := 0; k < n; k++ {
				s, ok := row[num+k]
				if !ok {
					break
				}
				blk = append(blk, s)
			}
			if len(blk) == n {
				out = append(out, blk)
			}
		}
	}
	return out
}

// Choose picks n seats from a seat map. A hot fan takes the best side-by-side block by rank (so hot fans all
// reach for the same seats); anyone else takes a random block. Without a block of n, the fan takes n scattered
// seats (best or random), and with fewer than n seats left, whatever is left. Nil means nothing is available.
func Choose(seats []client.Seat, n int, hot bool, rng *rand.Rand) []string {
	free := available(seats)
	if len(free) == 0 {
		return nil
	}
	if n > len(free) {
		n = len(free)
	}
	ranked := rank(free)
	pos := make(map[string]int, len(ranked))
	for i, s := range ranked {
		pos[s.SeatID] = i
	}
	bl := blocks(free, n)
	var pick []client.Seat
	switch {
	case len(bl) > 0 && hot:
		score := func(b []client.Seat) int {
			sum := 0
			for _, s := range b {
				sum += pos[s.SeatID]
			}
			return sum
		}
		sort.Slice(bl, func(i, j int) bool {
			si, sj := score(bl[i]), score(bl[j])
			if si != sj {
				return si < sj
			}
			return bl[i][0].SeatID < bl[j][0].SeatID
		})
		pick = bl[0]
	case len(bl) > 0:
		pick = bl[rng.IntN(len(bl))]
	case hot:
		pick = ranked[:n]
	default:
		idx := rng.Perm(len(free))[:n]
		for _, i := range idx {
			pick = append(pick, free[i])
		}
	}
	ids := make([]string, len(pick))
	for i, s := range pick {
		ids[i] = s.SeatID
	}
	return ids
}

// HotSeats is the n most wanted seats of a whole hall, whatever their status: what a hold-storm's hot clients
// fight over.
func HotSeats(seats []client.Seat, n int) []string {
	r := rank(seats)
	if n > len(r) {
		n = len(r)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = r[i].SeatID
	}
	return ids
}

// sample takes n distinct ids from ids at random.
func sample(ids []string, n int, rng *rand.Rand) []string {
	if n > len(ids) {
		n = len(ids)
	}
	out := make([]string, n)
	for i, j := range rng.Perm(len(ids))[:n] {
		out[i] = ids[j]
	}
	return out
}
