package waitroom_test

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

func eligible(show string, n int) []waitroom.Eligible {
	out := make([]waitroom.Eligible, n)
	for i := range out {
		u := "fan-" + strconv.Itoa(i)
		out[i] = waitroom.Eligible{User: u, Hash: waitroom.FanHash(show, u)}
	}
	return out
}

// TestDrawWave: the draw depends only on the seed and the set of fans (not their order), invites min(count,
// eligible) distinct fans, and another seed invites others.
func TestDrawWave(t *testing.T) {
	t.Parallel()
	seed, _ := waitroom.NewSeed()
	el := eligible("s1", 500)
	a, err := waitroom.DrawWave(seed, el, 100)
	if err != nil || len(a) != 100 {
		t.Fatalf("draw: %d %v", len(a), err)
	}
	rev := make([]waitroom.Eligible, len(el))
	for i := range el {
		rev[len(el)-1-i] = el[i]
	}
	b, _ := waitroom.DrawWave(seed, rev, 100)
	seen := map[string]bool{}
	for j := range a {
		if el[a[j]].User != rev[b[j]].User {
			t.Fatalf("order %d: %s in one order, %s in the other", j, el[a[j]].User, rev[b[j]].User)
		}
		if seen[el[a[j]].User] {
			t.Fatalf("%s invited twice", el[a[j]].User)
		}
		seen[el[a[j]].User] = true
	}
	if all, _ := waitroom.DrawWave(seed, el, 1000); len(all) != 500 {
		t.Errorf("a wave larger than the list invites %d", len(all))
	}
	other, _ := waitroom.NewSeed()
	c, _ := waitroom.DrawWave(other, el, 100)
	same := 0
	for _, i := range c {
		if seen[el[i].User] {
			same++
		}
	}
	if same > 50 { // 20 expected; 50 or more has odds far below one in a billion
		t.Errorf("another seed invites %d of the same 100", same)
	}
}

// TestDrawWaveUniform: over many seeds, each of 20 fans is invited in a wave of 5 about a quarter of the time.
func TestDrawWaveUniform(t *testing.T) {
	t.Parallel()
	el := eligible("s2", 20)
	counts := make([]int, len(el))
	const rounds = 4000
	for range rounds {
		seed, _ := waitroom.NewSeed()
		idx, _ := waitroom.DrawWave(seed, el, 5)
		for _, i := range idx {
			counts[i]++
		}
	}
	for i, n := range counts { // expected 1000, sd ~27: ±15 % is over five sd
		if n < 850 || n > 1150 {
			t.Errorf("fan %d invited %d times of %d, want about %d", i, n, rounds, rounds/4)
		}
	}
}

// BenchmarkDrawWave draws a wave of a third of the list: sizes 300,000 and 3,000,000 (a wave of 1,000,000).
// The memory it reports is the draw's own, beside the list the record read.
func BenchmarkDrawWave(b *testing.B) {
	for _, n := range []int{300_000, 3_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			el := eligible("bench", n)
			seed, _ := waitroom.NewSeed()
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if idx, err := waitroom.DrawWave(seed, el, n/3); err != nil || len(idx) != n/3 {
					b.Fatal(err)
				}
			}
		})
	}
}
