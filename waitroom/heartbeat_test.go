package waitroom

import (
	"fmt"
	"testing"
	"time"
)

// TestDueSpreadsHeartbeats: each streaming fan's heartbeat is rewritten once per refresh, not at every flush, and
// a crowd that connected at once is spread over the refresh rather than rewritten in one flush.
func TestDueSpreadsHeartbeats(t *testing.T) {
	h := NewHub()
	const fans = 400
	for i := range fans {
		if _, err := h.Add("s1", fmt.Sprintf("u%d", i), Place{Status: Waiting, Seq: int64(i + 1)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	every, flush := time.Second, 100*time.Millisecond
	t0 := time.Now()
	if got := h.Due("s1", t0, every); len(got) != 0 {
		t.Fatalf("first flush after the joins: %d due, want none (the joins wrote them)", len(got))
	}
	for round := range 3 {
		seen := map[string]int{}
		for step := 1; step <= int(every/flush); step++ {
			at := t0.Add(time.Duration(round)*every + time.Duration(step)*flush)
			due := h.Due("s1", at, every)
			if len(due) > fans/4 {
				t.Errorf("round %d step %d: %d of %d fans due in one flush, want them spread", round, step, len(due), fans)
			}
			for _, u := range due {
				seen[u]++
			}
		}
		for i := range fans {
			if u := fmt.Sprintf("u%d", i); seen[u] != 1 {
				t.Fatalf("round %d: fan %s rewritten %d times, want once per refresh", round, u, seen[u])
			}
		}
	}
}

// TestDueEveryFlushWhileRebuilding: in a rebuild's gap every stream is due at every flush, so fans the rebuilt
// queue lacks are put back before the cursor passes them.
func TestDueEveryFlushWhileRebuilding(t *testing.T) {
	h := NewHub()
	for i := range 10 {
		if _, err := h.Add("s1", fmt.Sprintf("u%d", i), Place{Status: Waiting, Seq: int64(i + 1)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	h.Due("s1", now, time.Hour) // scheduled an hour out
	h.ApplyTick(TickResult{Show: "s1", Phase: PhaseOpen, Cursor: 0, Gap: Gap{End: 2000, Empty: 1990}}, false)
	for step := range 3 {
		if got := h.Due("s1", now.Add(time.Duration(step)*time.Millisecond), time.Hour); len(got) != 10 {
			t.Fatalf("flush %d in the gap: %d due, want all 10", step, len(got))
		}
	}
	h.ApplyTick(TickResult{Show: "s1", Phase: PhaseOpen, Cursor: 2001}, false)
	if got := h.Due("s1", now.Add(time.Second), time.Hour); len(got) != 0 {
		t.Fatalf("after the gap: %d due, want none before the refresh", len(got))
	}
}

// TestBeatAgainAfterAFailedWrite: a heartbeat whose rewrite failed is due again at the next flush.
func TestBeatAgainAfterAFailedWrite(t *testing.T) {
	h := NewHub()
	if _, err := h.Add("s1", "u1", Place{Status: Waiting, Seq: 1}, 0); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h.Due("s1", now, time.Second)
	due := h.Due("s1", now.Add(time.Second), time.Second)
	if len(due) != 1 {
		t.Fatalf("due after a refresh: %v", due)
	}
	h.beatAgain("s1", due)
	if got := h.Due("s1", now.Add(time.Second+time.Millisecond), time.Second); len(got) != 1 {
		t.Fatalf("after a failed write: %v due, want u1 again", got)
	}
}

func TestHeartbeatRefresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		want time.Duration
	}{
		{"a quarter of the grace", Options{Grace: 30 * time.Second, HeartbeatEvery: 2 * time.Second}, 7500 * time.Millisecond},
		{"never below the flush", Options{Grace: 4 * time.Second, HeartbeatEvery: 2 * time.Second}, 2 * time.Second},
		{"set", Options{Grace: 30 * time.Second, HeartbeatEvery: time.Second, HeartbeatRefresh: 5 * time.Second}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heartbeatRefresh(tc.opt); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
