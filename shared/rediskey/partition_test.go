package rediskey

import (
	"fmt"
	"math"
	"testing"
)

// A show's K lines sit at evenly spaced slots, so a three-master cluster (each master a contiguous third of the
// slots) serves K/3 of them each.
func TestLinesSpreadOverMasters(t *testing.T) {
	t.Parallel()
	for _, show := range []string{"sh_1", "sh_ce9197a4d849b6a6da986157c04103bb", "x"} {
		for _, k := range []int{3, 12, 64} {
			seen := map[string]bool{}
			perMaster := make([]int, 3)
			for p, line := range Lines(show, k) {
				if seen[line] {
					t.Fatalf("%s k=%d: line %s twice", show, k, line)
				}
				seen[line] = true
				if ShowOf(line) != show {
					t.Errorf("ShowOf(%s) = %s", line, ShowOf(line))
				}
				if Line(show, p, k) != line {
					t.Errorf("Line(%s,%d,%d) is not stable", show, p, k)
				}
				perMaster[int(Slot(testWait(line)))*3/16384]++
			}
			for m, n := range perMaster {
				if n != k/3 && n != k/3+1 {
					t.Errorf("%s k=%d: master %d serves %d lines %v", show, k, m, n, perMaster)
				}
			}
		}
	}
	if Line("sh_1", 0, 3) != "sh_1" || Line("sh_1", 2, 1) != "sh_1" {
		t.Error("partition 0 (and a single queue) is the show itself")
	}
}

func testWait(line string) string { return Tag(line) + ":wr:wait" }

// Fans spread evenly over the partitions, and a fan stays in theirs when the count is the same.
func TestPartitionOfIsEven(t *testing.T) {
	t.Parallel()
	for _, k := range []int{3, 12} {
		counts := make([]float64, k)
		const n = 120000
		for i := range n {
			u := fmt.Sprintf("u%d", i)
			p := PartitionOf(u, k)
			if p < 0 || p >= k || PartitionOf(u, k) != p {
				t.Fatalf("PartitionOf(%s,%d) = %d", u, k, p)
			}
			counts[p]++
		}
		chi := 0.0
		for _, c := range counts {
			e := float64(n) / float64(k)
			chi += (c - e) * (c - e) / e
		}
		// 99.9th percentile of chi-square with k-1 degrees of freedom: 13.8 (2), 31.3 (11).
		if limit := map[int]float64{3: 13.8, 12: 31.3}[k]; chi > limit || math.IsNaN(chi) {
			t.Errorf("k=%d: chi-square %.1f over %.1f: %v", k, chi, limit, counts)
		}
	}
	if PartitionOf("anyone", 1) != 0 {
		t.Error("one partition")
	}
}

// Booking finds a line's active set from the jti alone.
func TestActiveForFindsTheLine(t *testing.T) {
	t.Parallel()
	line := Line("sh_9", 5, 12)
	jti := JTIPrefix(line) + "ab12cd.17"
	if got, want := ActiveFor("sh_9", jti), QueueActive(line); got != want {
		t.Errorf("ActiveFor = %s, want %s", got, want)
	}
	if got := ActiveFor("sh_9", "ab12cd.17"); got != QueueActive("sh_9") {
		t.Errorf("a show's own jti: %s", got)
	}
	if JTIPrefix("sh_9") != "" {
		t.Error("the show's own queue has no prefix")
	}
}
