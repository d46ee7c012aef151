package crowd

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/flashseat/flashseat/loadtest/client"
)

func hall(t testing.TB, seats int) []client.Seat {
	t.Helper()
	var out []client.Seat
	for _, r := range Layout(seats) {
		for n := 1; n <= r.Seats; n++ {
			out = append(out, client.Seat{SeatID: r.Row + itoa(n), Row: r.Row, Number: n, Category: r.Category,
				Price: prices[r.Category], Status: "AVAILABLE"})
		}
	}
	return out
}

// takenHall is a hall of size seats, about one in oneIn of them taken.
func takenHall(t testing.TB, size, oneIn int, seed uint64) []client.Seat {
	seats := hall(t, size)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range seats {
		if rng.IntN(oneIn) == 0 {
			seats[i].Status = "HELD"
		}
	}
	return seats
}

func TestLayout(t *testing.T) {
	total := 0
	for _, r := range Layout(5000) {
		total += r.Seats
	}
	if total != 5000 {
		t.Errorf("got %d seats, want 5000", total)
	}
	if got := RowName(26); got != "AA" {
		t.Errorf("RowName(26) = %s, want AA", got)
	}
}

func TestChooseHotFansCollide(t *testing.T) {
	seats := hall(t, 200)
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHall(seats)
	a := h.Choose(seats, 4, true, rng)
	b := h.Choose(seats, 4, true, rng)
	if !slices.Equal(a, b) || len(a) != 4 {
		t.Fatalf("got %v and %v, want the same 4 best seats", a, b)
	}
	for _, s := range seats {
		if s.SeatID == a[0] && s.Category != "PLATINUM" {
			t.Errorf("hot fan chose %s (%s), want PLATINUM", s.SeatID, s.Category)
		}
	}
}

func TestChooseTakesWhatIsLeft(t *testing.T) {
	seats := hall(t, 200)
	for i := range seats {
		seats[i].Status = "BOOKED"
	}
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHall(seats)
	if got := h.Choose(available(seats), 2, false, rng); got != nil {
		t.Fatalf("got %v from a sold-out hall, want nil", got)
	}
	seats[5].Status, seats[50].Status = "AVAILABLE", "AVAILABLE"
	got := h.Choose(available(seats), 6, false, rng)
	if len(got) != 2 {
		t.Fatalf("got %v, want the 2 seats left", got)
	}
}

// TestChooseRunsAreSideBySide: a fan who is not hot takes a random run of free seats side by side in one row;
// runs differ between fans; a free list out of the map's order chooses the same.
func TestChooseRunsAreSideBySide(t *testing.T) {
	seats := takenHall(t, 500, 3, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	h := NewHall(seats)
	free := available(seats)
	byID := map[string]client.Seat{}
	for _, s := range free {
		byID[s.SeatID] = s
	}
	seen := map[string]bool{}
	for range 50 {
		got := h.Choose(free, 3, false, rng)
		if len(got) != 3 {
			t.Fatalf("got %v, want 3 seats", got)
		}
		first, ok := byID[got[0]]
		for k, id := range got {
			s, isFree := byID[id]
			if !ok || !isFree || s.Row != first.Row || s.Number != first.Number+k {
				t.Fatalf("got %v: not 3 free seats side by side in one row", got)
			}
		}
		seen[got[0]] = true
	}
	if len(seen) < 10 {
		t.Errorf("50 fans chose among %d runs only, want them spread", len(seen))
	}
	reversed := slices.Clone(free)
	slices.Reverse(reversed)
	a := h.Choose(free, 4, true, rand.New(rand.NewPCG(1, 1)))
	b := h.Choose(reversed, 4, true, rand.New(rand.NewPCG(1, 1)))
	if !slices.Equal(a, b) {
		t.Errorf("in the map's order %v, reversed %v: want the same best run", a, b)
	}
}

// TestChooseHotWithoutARun: with no two free seats side by side, a hot fan takes the best free seats by rank and
// any other fan two distinct free seats.
func TestChooseHotWithoutARun(t *testing.T) {
	seats := hall(t, 200)
	for i := range seats {
		if seats[i].Number%2 == 0 {
			seats[i].Status = "BOOKED"
		}
	}
	h := NewHall(seats)
	free := available(seats)
	var want []string
	for _, id := range HotSeats(seats, len(seats)) {
		if slices.ContainsFunc(free, func(s client.Seat) bool { return s.SeatID == id }) {
			want = append(want, id)
		}
	}
	if got := h.Choose(free, 2, true, rand.New(rand.NewPCG(1, 2))); !slices.Equal(got, want[:2]) {
		t.Errorf("hot fan got %v, want the two best free seats %v", got, want[:2])
	}
	got := h.Choose(free, 2, false, rand.New(rand.NewPCG(5, 6)))
	if len(got) != 2 || got[0] == got[1] {
		t.Errorf("got %v, want two distinct seats", got)
	}
	for _, id := range got {
		if !slices.ContainsFunc(free, func(s client.Seat) bool { return s.SeatID == id }) {
			t.Errorf("got %v: %s is not free", got, id)
		}
	}
}

// TestChooseIsValid: over many halls, group sizes and fans, a choice names distinct seats, all free in the fan's
// copy of the map (where a 409 marked some taken since), and is empty only when none is free.
func TestChooseIsValid(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		seats := takenHall(t, 5000, int(2+seed%10), seed)
		rng := rand.New(rand.NewPCG(seed, 9))
		if seed%3 == 0 { // nearly sold out: few runs, if any
			for i := range seats {
				if rng.IntN(100) < 97 {
					seats[i].Status = "BOOKED"
				}
			}
		}
		h := NewHall(seats)
		free := available(seats)
		if seed%2 == 0 { // a 409 named some of the copy's seats taken
			for i := range free {
				if rng.IntN(4) == 0 {
					free[i].Status = "HELD"
				}
			}
		}
		left := map[string]bool{}
		for _, s := range free {
			left[s.SeatID] = s.Status == "AVAILABLE"
		}
		for n := 1; n <= 6; n++ {
			for _, hot := range []bool{true, false} {
				got := h.Choose(free, n, hot, rng)
				if len(got) == 0 && slices.ContainsFunc(free, func(s client.Seat) bool { return s.Status == "AVAILABLE" }) {
					t.Fatalf("seed %d, %d seats, hot %v: nothing chosen with seats free", seed, n, hot)
				}
				seen := map[string]bool{}
				for _, id := range got {
					if seen[id] || !left[id] {
						t.Fatalf("seed %d, %d seats, hot %v: %v names %s twice or not free", seed, n, hot, got, id)
					}
					seen[id] = true
				}
			}
		}
	}
}

// TestHallOfFollowsTheMap: the crowd's hall is worked out once, and again for a map of another hall.
func TestHallOfFollowsTheMap(t *testing.T) {
	var cache atomic.Pointer[Hall]
	a := hall(t, 200)
	h1 := hallOf(&cache, a)
	if h2 := hallOf(&cache, slices.Clone(a)); h2 != h1 {
		t.Error("the same hall was worked out twice")
	}
	if h3 := hallOf(&cache, hall(t, 300)); h3 == h1 || len(h3.ids) != 300 {
		t.Error("another hall's map was given the first hall")
	}
}

func TestTicketAndIssuedAt(t *testing.T) {
	if got := ticket("p-42-17"); got != 42 {
		t.Errorf("ticket(p-42-17) = %d, want 42", got)
	}
	for _, id := range []string{"", "a-jti", "p-x-1", "p--1"} {
		if got := ticket(id); got != 0 {
			t.Errorf("ticket(%q) = %d, want 0", id, got)
		}
	}
	// header.{"sub":"u","iat":1700000000,"exp":1700000060}.sig
	tok := "e30.eyJzdWIiOiJ1IiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDAwNjB9.c2ln"
	if iat, exp := claimTimes(tok); iat != 1700000000 || exp != 1700000060 {
		t.Errorf("claimTimes = %d, %d, want 1700000000, 1700000060", iat, exp)
	}
	if iat, exp := claimTimes("garbage"); iat != 0 || exp != 0 {
		t.Errorf("claimTimes(garbage) = %d, %d, want zeros", iat, exp)
	}
}

// BenchmarkChoose: one fan's choice from a 5,000-seat stadium hall with half its seats free.
func BenchmarkChoose(b *testing.B) {
	seats := takenHall(b, 5000, 2, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	free := available(seats)
	h := NewHall(seats)
	for _, hot := range []bool{true, false} {
		b.Run(map[bool]string{true: "hot", false: "random"}[hot], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(h.Choose(free, 4, hot, rng)) != 4 {
					b.Fatal("no choice")
				}
			}
		})
	}
}
