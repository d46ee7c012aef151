package streamcap_test

import (
	"testing"

	"github.com/flashseat/flashseat/shared/streamcap"
)

// TestCaps: a stream is counted under every key or none, refused when any key is at its max, and given back.
func TestCaps(t *testing.T) {
	var c streamcap.Caps
	keys, maxes := []string{"user:a", "prefix:p"}, []int{2, 3}
	for i := range 2 {
		if !c.Take(keys, maxes) {
			t.Fatalf("stream %d refused", i)
		}
	}
	if c.Take(keys, maxes) {
		t.Fatal("a third stream of user:a was counted")
	}
	if !c.Take([]string{"user:b", "prefix:p"}, maxes) || c.Take([]string{"user:c", "prefix:p"}, maxes) {
		t.Fatal("the prefix's cap of 3 did not hold")
	}
	if got := c.Open("user:c"); got != 0 {
		t.Fatalf("a refused stream was counted: %d", got)
	}
	c.Give(keys...)
	if got := c.Open("prefix:p"); got != 2 || !c.Take([]string{"user:c", "prefix:p"}, maxes) {
		t.Fatalf("a given-back stream's place did not come back: prefix %d", got)
	}
	if !c.Take([]string{"x"}, []int{0}) {
		t.Fatal("max 0 must not bound")
	}
}
