package booking

import (
	"fmt"
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
