package crowd

import (
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/flashseat/flashseat/loadtest/client"
)

// Hall is what every fan knows of a hall once it has seen the seat map: each seat's rank, from most to least
// wanted, and its neighbour to the right. Both depend on the layout only, never on what is free, so a crowd
// works them out once and every fan's choice is one pass over the hall: ranking the seats anew for each
// choice (a stable sort of 5,000 seats through maps) took 4.8 ms and 2 MB, and was the stadium generator's
// largest cost.
//
// The rank is the dearest category first, then the seat nearest its row's centre, then the row nearest the
// screen within the category. Every fan ranks alike, which is what makes the hot share collide.
type Hall struct {
	ids    []string         // seat ids, in the map's order
	index  map[string]int32 // seat id -> position in ids
	rank   []int32          // position in ids -> rank, 0 the most wanted
	byRank []int32          // positions in ids, most wanted first
	right  []int32          // position in ids -> the seat numbered one higher in the same row, or -1
}

// NewHall works out the ranks and neighbours of a seat map's seats (whatever their status).
func NewHall(seats []client.Seat) *Hall {
	h := &Hall{ids: make([]string, len(seats)), index: make(map[string]int32, len(seats)),
		rank: make([]int32, len(seats)), byRank: make([]int32, len(seats)), right: make([]int32, len(seats))}
	type place struct {
		row string
		num int
	}
	at := make(map[place]int32, len(seats))
	rowLen := map[string]int{}
	for i, s := range seats {
		h.ids[i] = s.SeatID
		h.index[s.SeatID] = int32(i)
		h.byRank[i] = int32(i)
		at[place{s.Row, s.Number}] = int32(i)
		rowLen[s.Row] = max(rowLen[s.Row], s.Number)
	}
	for i, s := range seats {
		h.right[i] = -1
		if j, ok := at[place{s.Row, s.Number + 1}]; ok {
			h.right[i] = j
		}
	}
	// Twice the distance from the centre, to stay in integers.
	centre := func(s client.Seat) int {
		d := 2*s.Number - (rowLen[s.Row] + 1)
		if d < 0 {
			d = -d
		}
		return d
	}
	sort.SliceStable(h.byRank, func(i, j int) bool {
		a, b := seats[h.byRank[i]], seats[h.byRank[j]]
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
	for r, i := range h.byRank {
		h.rank[i] = int32(r)
	}
	return h
}

// fits reports whether the hall is the one seats (a seat map) shows.
func (h *Hall) fits(seats []client.Seat) bool {
	if len(seats) != len(h.ids) {
		return false
	}
	for i, s := range seats {
		if s.SeatID != h.ids[i] {
			return false
		}
	}
	return true
}

// hallOf is the crowd's hall for a seat map: worked out from the first map a fan fetched, and anew only when a
// map shows another hall.
func hallOf(cache *atomic.Pointer[Hall], seats []client.Seat) *Hall {
	if h := cache.Load(); h != nil && h.fits(seats) {
		return h
	}
	h := NewHall(seats)
	cache.Store(h)
	return h
}

// Free is a fan's copy of which seats of the hall are free, by position in the hall: a byte a seat, where a copy
// of the map's free seats themselves took 200 KB a fan, and the stadium's admitted fans held 170 MB of them in one
// generator process.
type Free []bool

// Free reads which seats a map of this hall (hallOf) shows AVAILABLE.
func (h *Hall) Free(seats []client.Seat) Free {
	free := make(Free, len(h.ids))
	for i := range min(len(seats), len(free)) {
		free[i] = seats[i].Status == "AVAILABLE"
	}
	return free
}

// Take marks the named seats taken in free, as a 409 names them.
func (h *Hall) Take(free Free, ids []string) {
	for _, id := range ids {
		if i, ok := h.index[id]; ok && int(i) < len(free) {
			free[i] = false
		}
	}
}

// Choose picks n of the seats free shows. A hot fan takes the best run of n side-by-side seats in one row, the one
// whose ranks add up least (so hot fans all reach for the same seats); anyone else takes a random run. Without a
// run of n, the fan takes n scattered seats (the best, or at random), and with fewer than n seats left, whatever
// is left. Nil means nothing is free.
func (h *Hall) Choose(free Free, n int, hot bool, rng *rand.Rand) []string {
	if len(free) != len(h.ids) {
		return nil // not a copy of this hall
	}
	count := 0
	for _, f := range free {
		if f {
			count++
		}
	}
	if count == 0 {
		return nil
	}
	n = min(n, count)

	// run reports whether n free seats side by side start at i.
	run := func(i int32) bool {
		for k := 0; k < n; k++ {
			if i < 0 || !free[i] {
				return false
			}
			i = h.right[i]
		}
		return true
	}
	best, bestScore, runs := int32(-1), 0, 0
	for i := range h.ids {
		if !run(int32(i)) {
			continue
		}
		runs++
		if !hot {
			continue
		}
		score := 0
		for k, j := 0, int32(i); k < n; k, j = k+1, h.right[j] {
			score += int(h.rank[j])
		}
		if best < 0 || score < bestScore || (score == bestScore && h.ids[i] < h.ids[best]) {
			best, bestScore = int32(i), score
		}
	}
	pick := make([]string, 0, n)
	switch {
	case runs > 0:
		if !hot {
			k := rng.IntN(runs)
			for i := range h.ids {
				if run(int32(i)) {
					if k == 0 {
						best = int32(i)
						break
					}
					k--
				}
			}
		}
		for k, j := 0, best; k < n; k, j = k+1, h.right[j] {
			pick = append(pick, h.ids[j])
		}
	case hot:
		for _, i := range h.byRank {
			if free[i] {
				if pick = append(pick, h.ids[i]); len(pick) == n {
					break
				}
			}
		}
	default:
		// The k-th free seat not yet drawn, for n draws: one pass each, and free is left as it was.
		drawn := make([]int, 0, n)
		for len(pick) < n {
			k := rng.IntN(count - len(drawn))
			for j := range h.ids {
				if free[j] && !slices.Contains(drawn, j) {
					if k == 0 {
						drawn = append(drawn, j)
						pick = append(pick, h.ids[j])
						break
					}
					k--
				}
			}
		}
	}
	return pick
}

// HotSeats is the n most wanted seats of a whole hall, whatever their status: what a hold-storm's hot clients
// fight over.
func HotSeats(seats []client.Seat, n int) []string {
	h := NewHall(seats)
	n = min(n, len(h.byRank))
	ids := make([]string, n)
	for r := range ids {
		ids[r] = h.ids[h.byRank[r]]
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
