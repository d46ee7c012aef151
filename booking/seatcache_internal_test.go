package booking

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSnapshotMemo: the alternatives computed on a snapshot are kept while the seats stay as they were (a reload
// or a note that changes nothing) and dropped when a seat changes, so a stale answer is never offered; and a
// crowd of distinct requests stops adding to the memo at its cap.
func TestSnapshotMemo(t *testing.T) {
	t.Parallel()
	var layout []Seat
	index := map[string]int{}
	for n := 1; n <= 6; n++ {
		index[SeatID("A", n)] = len(layout)
		layout = append(layout, Seat{ID: SeatID("A", n), Row: "A", Number: n, Category: "GOLD"})
	}
	held := map[string]bool{"A1": true, "A2": true}
	sn := newSnapshot(time.Now(), layout, index, held, nil)
	wanted := []Seat{layout[0], layout[1]}
	if got := sn.alternatives(layout, wanted); !slices.Equal(got, []string{"A3", "A4"}) {
		t.Fatalf("alternatives = %v", got)
	}

	same := newSnapshot(time.Now(), layout, index, held, nil)
	same.inherit(sn)
	if same.alts != sn.alts {
		t.Fatal("a reload with the same seats dropped the memo")
	}
	if sn.with([]string{"A1"}, true) != sn {
		t.Fatal("noting a held seat as held made a new snapshot")
	}

	changed := sn.with([]string{"A3"}, true)
	if changed.alts == sn.alts {
		t.Fatal("a changed seat kept the memo")
	}
	if got := changed.alternatives(layout, wanted); !slices.Equal(got, []string{"A4", "A5"}) {
		t.Fatalf("alternatives after A3 was taken = %v", got)
	}
	reloaded := newSnapshot(time.Now(), layout, index, map[string]bool{"A1": true}, nil)
	reloaded.inherit(changed)
	if reloaded.alts == changed.alts {
		t.Fatal("a reload with other seats kept the memo")
	}

	for n := range maxMemo + 100 {
		sn.alternatives(layout, []Seat{{ID: fmt.Sprint("X", n), Category: "GOLD"}})
	}
	stored := 0
	sn.alts.m.Range(func(any, any) bool { stored++; return true })
	if stored > maxMemo {
		t.Fatalf("memo holds %d keys, cap %d", stored, maxMemo)
	}
}

// TestSnapshotMemoAfterTaking: a memo built on an earlier state's (seats only taken since) answers exactly as
// pickAlternatives on the current seats would, over random claims, releases and reloads.
func TestSnapshotMemoAfterTaking(t *testing.T) {
	t.Parallel()
	var layout []Seat
	index := map[string]int{}
	for _, row := range []string{"A", "B", "C", "D"} {
		for n := 1; n <= 10; n++ {
			cat := "GOLD"
			if n > 7 {
				cat = "SILVER"
			}
			index[SeatID(row, n)] = len(layout)
			layout = append(layout, Seat{ID: SeatID(row, n), Row: row, Number: n, Category: cat})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	taken := map[string]bool{}
	sn := newSnapshot(time.Now(), layout, index, taken, nil)
	reused := 0
	for step := range 5000 {
		switch op := rng.IntN(10); {
		case op < 6: // a claim or a seat event takes seats
			ids := []string{layout[rng.IntN(len(layout))].ID, layout[rng.IntN(len(layout))].ID}
			for _, id := range ids {
				taken[id] = true
			}
			sn = sn.with(ids, true)
		case op < 7: // a release
			id := layout[rng.IntN(len(layout))].ID
			delete(taken, id)
			sn = sn.with([]string{id}, false)
		default: // a reload that finds some seats taken, or freed, by others
			for range 2 {
				if id := layout[rng.IntN(len(layout))].ID; rng.IntN(4) == 0 {
					delete(taken, id)
				} else {
					taken[id] = true
				}
			}
			next := newSnapshot(time.Now(), layout, index, taken, nil)
			next.inherit(sn)
			sn = next
		}
		if len(taken) > len(layout)*3/4 {
			clear(taken)
			next := newSnapshot(time.Now(), layout, index, taken, nil)
			next.inherit(sn)
			sn = next
		}
		if sn.alts.base != nil {
			reused++
		}
		for range 3 {
			i := rng.IntN(len(layout) - 1)
			wanted := []Seat{layout[i], layout[i+1]}
			got := sn.alternatives(layout, wanted)
			want := pickAlternatives(layout, func(i int) bool { return !taken[layout[i].ID] }, wanted)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d, %v taken, asked %s %s: alternatives %v, want %v", step, slices.Sorted(maps.Keys(taken)),
					wanted[0].ID, wanted[1].ID, got, want)
			}
		}
	}
	if reused == 0 {
		t.Fatal("no memo was ever built on an earlier one")
	}
}
