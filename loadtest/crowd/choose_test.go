package crowd

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flashseat/flashseat/loadtest/client"
)

func hall(t *testing.T, seats int) []client.Seat {
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
	a := Choose(seats, 4, true, rng)
	b := Choose(seats, 4, true, rng)
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
	if got := Choose(seats, 2, false, rng); got != nil {
		t.Fatalf("got %v from a sold-out hall, want nil", got)
	}
	seats[5].Status, seats[50].Status = "AVAILABLE", "AVAILABLE"
	got := Choose(seats, 6, false, rng)
	if len(got) != 2 {
		t.Fatalf("got %v, want the 2 seats left", got)
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
