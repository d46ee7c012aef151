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
	a := h.Choose(h.Free(seats), 4, true, rng)
	b := h.Choose(h.Free(seats), 4, true, rng)
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
	if got := h.Choose(h.Free(seats), 2, false, rng); got != nil {
		t.Fatalf("got %v from a sold-out hall, want nil", got)
	}
	seats[5].Status, seats[50].Status = "AVAILABLE", "AVAILABLE"
	got := h.Choose(h.Free(seats), 6, false, rng)
	if len(got) != 2 {
		t.Fatalf("got %v, want the 2 seats left", got)
	}
}

// TestChooseRunsAreSideBySide: a fan who is not hot takes a random run of free seats side by side in one row, and
// runs differ between fans.
func TestChooseRunsAreSideBySide(t *testing.T) {
	seats := takenHall(t, 500, 3, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	h := NewHall(seats)
	byID := map[string]client.Seat{}
	for _, s := range available(seats) {
		byID[s.SeatID] = s
	}
	seen := map[string]bool{}
	for range 50 {
		got := h.Choose(h.Free(seats), 3, false, rng)
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
	isFree := func(id string) bool {
		return slices.ContainsFunc(seats, func(s client.Seat) bool { return s.SeatID == id && s.Status == "AVAILABLE" })
	}
	var want []string
	for _, id := range HotSeats(seats, len(seats)) {
		if isFree(id) {
			want = append(want, id)
		}
	}
	if got := h.Choose(h.Free(seats), 2, true, rand.New(rand.NewPCG(1, 2))); !slices.Equal(got, want[:2]) {
		t.Errorf("hot fan got %v, want the two best free seats %v", got, want[:2])
	}
	got := h.Choose(h.Free(seats), 2, false, rand.New(rand.NewPCG(5, 6)))
	if len(got) != 2 || got[0] == got[1] || !isFree(got[0]) || !isFree(got[1]) {
		t.Errorf("got %v, want two distinct free seats", got)
	}
}

// TestChooseIsValid: over many halls, group sizes and fans, a choice names distinct seats, all free in the fan's
// copy (where a 409 marked some taken since), and is empty only when none is free; the copy is left as it was.
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
		free := h.Free(seats)
		if seed%2 == 0 { // a 409 named some of the copy's seats taken
			var taken []string
			for _, s := range available(seats) {
				if rng.IntN(4) == 0 {
					taken = append(taken, s.SeatID)
				}
			}
			h.Take(free, taken)
		}
		before := slices.Clone(free)
		for n := 1; n <= 6; n++ {
			for _, hot := range []bool{true, false} {
				got := h.Choose(free, n, hot, rng)
				if len(got) == 0 && slices.Contains(free, true) {
					t.Fatalf("seed %d, %d seats, hot %v: nothing chosen with seats free", seed, n, hot)
				}
				seen := map[string]bool{}
				for _, id := range got {
					if seen[id] || !free[h.index[id]] {
						t.Fatalf("seed %d, %d seats, hot %v: %v names %s twice or not free", seed, n, hot, got, id)
					}
					seen[id] = true
				}
				if !slices.Equal(free, before) {
					t.Fatalf("seed %d, %d seats, hot %v: the choice changed the fan's copy", seed, n, hot)
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
	h := NewHall(seats)
	free := h.Free(seats)
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

// available keeps the seats a map shows as AVAILABLE.
func available(seats []client.Seat) []client.Seat {
	return slices.DeleteFunc(slices.Clone(seats), func(s client.Seat) bool { return s.Status != "AVAILABLE" })
}
