package waitroom_test

import (
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
)

func TestPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		seq, cursor, want int64
	}{
		{"no ticket yet", 0, 0, 0},
		{"head of the queue", 1, 0, 1},
		{"behind others", 10, 3, 7},
		{"just taken off", 5, 5, 1},
		{"cursor jumped past (skips)", 5, 9, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitroom.Position(tc.seq, tc.cursor); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
	// Never backwards: as the cursor moves forward, a fan's position never grows; distinct seqs never tie.
	prev := int64(1 << 62)
	for cursor := int64(0); cursor < 100; cursor += 7 {
		p := waitroom.Position(100, cursor)
		if p > prev || p < 1 {
			t.Fatalf("position %d after %d at cursor %d", p, prev, cursor)
		}
		prev = p
		if waitroom.Position(101, cursor) == p {
			t.Fatal("two fans tie")
		}
	}
}

func TestOrderPermutationAndRecipe(t *testing.T) {
	t.Parallel()
	seed, err := waitroom.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	fans := make([]string, 1000)
	for i := range fans {
		fans[i] = "fan" + strconv.Itoa(i)
	}
	o1, err := waitroom.Order(seed, fans)
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(fans)
	slices.Reverse(rev)
	o2, _ := waitroom.Order(seed, append(rev, fans[:10]...)) // another arrival order, with re-joins
	if !slices.Equal(o1, o2) {
		t.Fatal("the order depends on arrival order or duplicates")
	}
	got := slices.Clone(o1)
	slices.Sort(got)
	want := slices.Clone(fans)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("the order is not a permutation of the fans")
	}
	if _, err := waitroom.Order("not hex", fans); err == nil {
		t.Fatal("a non-hex seed was accepted")
	}
	c, err := waitroom.Commit(seed)
	if err != nil || len(c) != 64 {
		t.Fatalf("commit: %q, %v", c, err)
	}
	if d := waitroom.ParticipantsDigest(o1); d == waitroom.ParticipantsDigest(fans) {
		t.Fatal("the digest ignores the order")
	}
}

func TestRateMeterAndETA(t *testing.T) {
	t.Parallel()
	m := waitroom.NewRateMeter(10 * time.Second)
	t0 := time.Unix(1000, 0)
	if _, ok := m.Rate(); ok {
		t.Fatal("a rate before any sample")
	}
	for i := range 41 { // 10 s at 4 samples a second, 5 fans a second
		m.Observe(t0.Add(time.Duration(i)*250*time.Millisecond), int64(i)*5/4)
	}
	r, ok := m.Rate()
	if !ok || r < 4.9 || r > 5.1 {
		t.Fatalf("rate %v, %v; want 5", r, ok)
	}
	if got := waitroom.ETA(50, r, ok, 100); got < 9*time.Second || got > 11*time.Second {
		t.Fatalf("ETA %v, want ~10s from the measured rate", got)
	}
	if got := waitroom.ETA(50, 0, false, 10); got != 5*time.Second {
		t.Fatalf("ETA before measuring %v, want 5s from the configured rate", got)
	}
	// A long run keeps a bounded window.
	for i := range 10000 {
		m.Observe(t0.Add(time.Hour+time.Duration(i)*250*time.Millisecond), 1000+int64(i))
	}
	if r, _ := m.Rate(); r < 3.9 || r > 4.1 {
		t.Fatalf("rate after a long run %v, want 4", r)
	}
}

// TestHubNeverBlocks: a watcher with nobody subscribed yet (a stream between Watch and OnChange) does not hold
// up updates, and its notifications coalesce into one, handed to its subscriber when it comes; the latest state
// is what the watcher reads.
func TestHubNeverBlocks(t *testing.T) {
	t.Parallel()
	h := waitroom.NewHub()
	stalled, _ := h.Add("s", "slow", waitroom.Place{Seq: 50}, 0)
	live, _ := h.Add("s", "live", waitroom.Place{Seq: 20}, 0)
	liveSignals := wrtest.Signals(live)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := int64(1); c <= 10000; c++ {
			h.ApplyTick(waitroom.TickResult{Show: "s", Phase: waitroom.PhaseOpen, Cursor: c % 19, At: time.Now(),
				AdmitPerSecond: 10}, false)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("updates blocked on a stalled watcher")
	}
	<-liveSignals
	if u := live.Current(); u.Position != 20-10000%19 {
		t.Fatalf("live watcher: %+v", u)
	}
	var handed atomic.Int64
	stalled.OnChange(func() { handed.Add(1) })
	if n := handed.Load(); n != 1 {
		t.Fatalf("the stalled watcher's subscriber was handed %d signals, want its one pending", n)
	}
	if u := stalled.Current(); u.Position != 50-10000%19 {
		t.Fatalf("stalled watcher: %+v", u)
	}
	needSeq, needGrant := h.ApplyTick(waitroom.TickResult{Show: "s", Phase: waitroom.PhaseOpen, Cursor: 30}, false)
	if len(needSeq) != 0 || !slices.Equal(needGrant, []string{"live"}) {
		t.Fatalf("lookups: seq %v grant %v; want a grant lookup for the fan the cursor passed", needSeq, needGrant)
	}
	h.Remove(stalled)
	h.Remove(live)
	if h.Conns() != 0 {
		t.Fatal("watchers left behind")
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "a b", "{x}", "a|b", "a;b", "a=b", string(make([]byte, 129)), "é", "a\x00"} {
		if waitroom.ValidID(id) {
			t.Errorf("show id %q accepted", id)
		}
	}
	for _, id := range []string{"show-1", "7f3c9a2e-uuid", "sh_30353b7caac87c7ad30b8f311029337d", "a.b:c"} {
		if !waitroom.ValidID(id) {
			t.Errorf("show id %q refused", id)
		}
	}
	for _, id := range []string{"", "a\nb", "a\x7f", string(make([]byte, 257))} {
		if waitroom.ValidUser(id) {
			t.Errorf("user id %q accepted", id)
		}
	}
	for _, id := range []string{"guest-42", "auth0|5f3c", "user@example.com", "ü"} {
		if !waitroom.ValidUser(id) {
			t.Errorf("user id %q refused", id)
		}
	}
}

func TestHubStreamsPerFan(t *testing.T) {
	t.Parallel()
	h := waitroom.NewHub()
	var ws []*waitroom.Watcher
	for range 3 {
		w, err := h.Add("s", "tabs", waitroom.Place{Seq: 1}, 3)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if _, err := h.Add("s", "tabs", waitroom.Place{Seq: 1}, 3); !errors.Is(err, waitroom.ErrTooManyStreams) {
		t.Fatalf("fourth stream: got %v, want ErrTooManyStreams", err)
	}
	if _, err := h.Add("s", "other", waitroom.Place{Seq: 2}, 3); err != nil {
		t.Fatalf("another fan: %v", err)
	}
	h.Remove(ws[0])
	h.Remove(ws[0]) // twice is harmless
	if _, err := h.Add("s", "tabs", waitroom.Place{Seq: 1}, 3); err != nil {
		t.Fatalf("after closing a tab: %v", err)
	}
}

// A tick's grants reach their fans' watchers, whether the tick granted a few or many, and notify them though
// their streams are hushed; the others, hushed, only moved and are not notified.
func TestHubTickGrants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		granted int
	}{{"a few", 3}, {"many", 40}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := waitroom.NewHub()
			var ws []*waitroom.Watcher
			told := make([]atomic.Int64, 60)
			for i := range 60 {
				w, _ := h.Add("s", "f"+strconv.Itoa(i), waitroom.Place{Seq: int64(100 + i)}, 0)
				w.OnChange(func() { told[i].Add(1) })
				ws = append(ws, w)
			}
			h.ApplyTick(waitroom.TickResult{Show: "s", Phase: waitroom.PhaseOpen, Cursor: 50}, false)
			for i, w := range ws {
				if n := told[i].Swap(0); n != 1 {
					t.Fatalf("f%d: told %d times of the first tick, want once", i, n)
				}
				w.Hush(time.Now().Add(time.Minute))
			}
			var grants []waitroom.Grant
			for i := range tc.granted {
				grants = append(grants, waitroom.Grant{UserID: "f" + strconv.Itoa(i), JTI: "j" + strconv.Itoa(i)})
			}
			h.ApplyTick(waitroom.TickResult{Show: "s", Phase: waitroom.PhaseOpen, Cursor: 60, Grants: grants}, true)
			for i, w := range ws {
				u, granted := w.Current(), i < tc.granted
				if granted != (u.Status == waitroom.Admitted) || granted != (told[i].Load() == 1) {
					t.Errorf("f%d: got %v (told %d times), granted %v", i, u.Status, told[i].Load(), granted)
				}
				if granted && u.Grant.JTI != "j"+strconv.Itoa(i) {
					t.Errorf("f%d: got grant %q", i, u.Grant.JTI)
				}
			}
			// Unhushed, a fan hears that they moved.
			ws[59].Hush(time.Time{})
			h.ApplyTick(waitroom.TickResult{Show: "s", Phase: waitroom.PhaseOpen, Cursor: 61}, false)
			if n := told[59].Load(); n != 1 {
				t.Errorf("f59 unhushed: told %d times, want once", n)
			}
		})
	}
}
