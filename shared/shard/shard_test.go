package shard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/shared/shard"
)

func shows(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = shard.ID("sh_", fmt.Sprint("seed", i)) // random, like a real show id
	}
	return out
}

// Adding a third shard moves about a third of the shows, all of them to the new shard; none moves between the two
// shards that were there.
func TestAddingAShardMovesOnlyItsShare(t *testing.T) {
	two, err := shard.New([]string{"s1", "s2"})
	if err != nil {
		t.Fatal(err)
	}
	three, err := shard.New([]string{"s1", "s2", "s3"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	moved, per := 0, make([]int, 3)
	for _, id := range shows(n) {
		a, b := two.Of(id), three.Of(id)
		per[b]++
		if a == b {
			continue
		}
		moved++
		if b != 2 {
			t.Fatalf("show %s moved from %d to %d, not to the new shard", id, a, b)
		}
	}
	if share := float64(moved) / n; share < 0.25 || share > 0.42 {
		t.Fatalf("moved %.3f of the shows, want about 1/3", share)
	}
	for i, c := range per {
		if share := float64(c) / n; share < 0.25 || share > 0.42 {
			t.Fatalf("shard %d keeps %.3f of the shows, want about 1/3 (%v)", i, share, per)
		}
	}
}

// The order shards are listed in does not move shows: placement depends on the names.
func TestPlacementFollowsNames(t *testing.T) {
	a, _ := shard.New([]string{"x", "y", "z"})
	b, _ := shard.New([]string{"z", "x", "y"})
	for _, id := range shows(2000) {
		if a.Names()[a.Of(id)] != b.Names()[b.Of(id)] {
			t.Fatalf("show %s placed on %s and %s", id, a.Names()[a.Of(id)], b.Names()[b.Of(id)])
		}
	}
}

func TestIDCarriesTheShowsKey(t *testing.T) {
	r, _ := shard.New([]string{"s1", "s2", "s3"})
	for _, show := range shows(500) {
		for _, prefix := range []string{"bk_", "pa_", "pay_", "tk_", "rf_"} {
			id := shard.ID(prefix, show)
			if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+32 {
				t.Fatalf("id %q", id)
			}
			k, err := shard.KeyOfID(id)
			if err != nil || k != shard.KeyOf(show) || r.Locate(k) != r.Of(show) {
				t.Fatalf("KeyOfID(%q) = %v, %v; want %v", id, k, err, shard.KeyOf(show))
			}
		}
	}
	if a, b := shard.ID("bk_", "sh_1"), shard.ID("bk_", "sh_1"); a == b {
		t.Fatalf("two ids alike: %s", a)
	}
	for _, bad := range []string{"", "bk_", "bk_12", "bk_zzzzzzzz0000"} {
		if _, err := shard.KeyOfID(bad); !errors.Is(err, shard.ErrNoKey) {
			t.Fatalf("KeyOfID(%q) = %v, want ErrNoKey", bad, err)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     []shard.Shard
		bad      bool
	}{
		{"empty", "  ", nil, false},
		{"positional", "postgres://a/db postgres://b/db", []shard.Shard{{"s1", "postgres://a/db"}, {"s2", "postgres://b/db"}}, false},
		{"named multi-host", "east=postgres://h1:5432,h2:5432/db?target_session_attrs=read-write;west=postgres://w/db",
			[]shard.Shard{{"east", "postgres://h1:5432,h2:5432/db?target_session_attrs=read-write"}, {"west", "postgres://w/db"}}, false},
		{"not a URL", "mysql://x", nil, true},
		{"repeated name", "a=postgres://x/db a=postgres://y/db", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shard.Parse(tt.in)
			if (err != nil) != tt.bad {
				t.Fatalf("got error %v, want error %v", err, tt.bad)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := shard.New(nil); err == nil {
		t.Fatal("New(nil) accepted")
	}
	if _, err := shard.New([]string{"a", "a"}); err == nil {
		t.Fatal("repeated name accepted")
	}
}
