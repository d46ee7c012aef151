package postgres_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// seedShow creates a venue with one 2x5 hall, an event and a show on sale.
func seedShow(t testing.TB, st booking.Store) booking.Show {
	t.Helper()
	ctx := context.Background()
	v := booking.Venue{Name: "V", City: "C", Halls: []booking.Hall{{Name: "H", Rows: []booking.Row{
		{Label: "A", Seats: 5, Category: "SILVER"}, {Label: "B", Seats: 5, Category: "GOLD"}}}}}
	if err := st.CreateVenue(ctx, &v); err != nil {
		t.Fatal(err)
	}
	e := booking.Event{Title: "E", Kind: "movie", DurationMinutes: 90}
	if err := st.CreateEvent(ctx, &e); err != nil {
		t.Fatal(err)
	}
	sh := booking.Show{EventID: e.ID, HallID: v.Halls[0].ID, StartsAt: time.Now().Add(24 * time.Hour),
		SaleStartsAt: time.Now().Add(-time.Hour), Currency: "INR", Prices: map[string]int64{"SILVER": 100, "GOLD": 200}}
	if err := st.CreateShow(ctx, &sh); err != nil {
		t.Fatal(err)
	}
	return sh
}

func hold(t *testing.T, st *postgres.Store, show string, fence int64, seats ...string) booking.Booking {
	t.Helper()
	b := booking.Booking{ID: booking.NewID("bk_"), UserID: "u1", ShowID: show, SeatIDs: seats, Currency: "INR",
		Fence: fence, ExpiresAt: time.Now().Add(time.Minute), CreatedAt: time.Now()}
	if err := st.CreateHold(context.Background(), &b); err != nil {
		t.Fatalf("create hold: %v", err)
	}
	return b
}

func TestLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := postgres.New(pgtest.New(t))
	sh := seedShow(t, st)
	layout, err := st.Layout(ctx, sh.ID)
	if err != nil || len(layout) != 10 || layout[5].ID != "B1" || layout[5].Price != 200 {
		t.Fatalf("layout = %v, %v", layout, err)
	}
	if e1, _ := st.BumpEpoch(ctx, sh.ID); e1 != 1 {
		t.Fatalf("epoch = %d, want 1", e1)
	}

	first := hold(t, st, sh.ID, 10, "A1", "A2")
	if _, err := st.Confirm(ctx, first.ID); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if _, err := st.Confirm(ctx, first.ID); !errors.Is(err, booking.ErrNotHeld) {
		t.Fatalf("second confirm of one booking: got %v, want ErrNotHeld", err)
	}
	// Redis forgot: another hold on a sold seat, with a newer fence, must not become a second sale.
	second := hold(t, st, sh.ID, 20, "A2", "A3")
	if _, err := st.Confirm(ctx, second.ID); !errors.Is(err, booking.ErrSeatsUnavailable) {
		t.Fatalf("double sale: got %v, want ErrSeatsUnavailable", err)
	}
	// A superseded hold (someone holds A4 with a newer fence) cannot confirm.
	stale := hold(t, st, sh.ID, 30, "A4")
	hold(t, st, sh.ID, 40, "A4")
	if _, err := st.Confirm(ctx, stale.ID); !errors.Is(err, booking.ErrStale) {
		t.Fatalf("stale confirm: got %v, want ErrStale", err)
	}
	// A fence that went backwards is refused at hold time.
	b := booking.Booking{ID: booking.NewID("bk_"), UserID: "u1", ShowID: sh.ID, SeatIDs: []string{"A4"},
		Currency: "INR", Fence: 35, ExpiresAt: time.Now().Add(time.Minute), CreatedAt: time.Now()}
	if err := st.CreateHold(ctx, &b); !errors.Is(err, booking.ErrStale) {
		t.Fatalf("backwards fence: got %v, want ErrStale", err)
	}
	sold, _ := st.SoldSeats(ctx, sh.ID)
	if len(sold) != 2 {
		t.Fatalf("sold = %v", sold)
	}
}

func TestExpireDueOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := postgres.New(pgtest.New(t))
	sh := seedShow(t, st)
	for i := range 20 {
		b := booking.Booking{ID: booking.NewID("bk_"), UserID: "u", ShowID: sh.ID, SeatIDs: []string{booking.SeatID("A", i%5+1)},
			Currency: "INR", Fence: int64(i + 1), ExpiresAt: time.Now().Add(-time.Second), CreatedAt: time.Now()}
		if err := st.CreateHold(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bs, err := st.ExpireDue(ctx, "", time.Now(), 7)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, b := range bs {
				seen[b.ID]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("booking %s expired %d times", id, n)
		}
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := postgres.New(pgtest.New(t))
	if _, claimed, err := st.BeginIdempotent(ctx, "u", "hold", "k", "h1", 0); !claimed || err != nil {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	rec, claimed, err := st.BeginIdempotent(ctx, "u", "hold", "k", "h1", 0)
	if claimed || err != nil || rec.ResultID != "" {
		t.Fatalf("pending: %+v %v %v", rec, claimed, err)
	}
	if err := st.FinishIdempotent(ctx, "u", "hold", "k", "bk_1"); err != nil {
		t.Fatal(err)
	}
	rec, _, _ = st.BeginIdempotent(ctx, "u", "hold", "k", "h2", 0)
	if rec.ResultID != "bk_1" || rec.RequestHash != "h1" {
		t.Fatalf("finished: %+v", rec)
	}
	// A key left pending a minute (its request died) is taken over by one caller, for the same request only.
	if _, claimed, err := st.BeginIdempotent(ctx, "u", "hold", "dead", "h1", 0); !claimed || err != nil {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '1 minute'
		WHERE key = 'dead'`); err != nil {
		t.Fatal(err)
	}
	if rec, claimed, err := st.BeginIdempotent(ctx, "u", "hold", "dead", "h2", time.Second); claimed || err != nil || rec.TakenOver {
		t.Fatalf("another request's stale key: %+v %v %v", rec, claimed, err)
	}
	rec, claimed, err = st.BeginIdempotent(ctx, "u", "hold", "dead", "h1", time.Second)
	if !claimed || err != nil || !rec.TakenOver || rec.Age < 59*time.Second {
		t.Fatalf("stale key: %+v %v %v, want taken over a minute old", rec, claimed, err)
	}
	if rec, claimed, err := st.BeginIdempotent(ctx, "u", "hold", "dead", "h1", time.Second); claimed || err != nil || rec.TakenOver {
		t.Fatalf("the key just taken over: %+v %v %v, want pending", rec, claimed, err)
	}
}

// TestBookingsOf lists a user's bookings newest first, only theirs, at most the limit.
func TestBookingsOf(t *testing.T) {
	t.Parallel()
	st := postgres.New(pgtest.New(t))
	ctx := context.Background()
	sh := seedShow(t, st)
	var mine []booking.Booking
	for i, seat := range []string{"A1", "A2", "A3"} {
		b := booking.Booking{ID: booking.NewID("bk_"), UserID: "fan", ShowID: sh.ID, SeatIDs: []string{seat},
			Currency: "INR", Fence: int64(i + 1), ExpiresAt: time.Now().Add(time.Minute),
			CreatedAt: time.Now().Add(time.Duration(i) * time.Second)}
		if err := st.CreateHold(ctx, &b); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, b)
	}
	hold(t, st, sh.ID, 10, "B1") // user u1's
	got, err := st.BookingsOf(ctx, "fan", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != mine[2].ID || got[1].ID != mine[1].ID || got[2].ID != mine[0].ID {
		t.Fatalf("bookings = %+v, want the fan's three, newest first", got)
	}
	if got[0].Status != booking.StatusHeld || got[0].SeatIDs[0] != "A3" || got[0].UserID != "fan" {
		t.Fatalf("newest = %+v", got[0])
	}
	if two, err := st.BookingsOf(ctx, "fan", 2); err != nil || len(two) != 2 || two[0].ID != mine[2].ID {
		t.Fatalf("limit 2 = %+v, %v", two, err)
	}
	if none, err := st.BookingsOf(ctx, "nobody", 10); err != nil || len(none) != 0 {
		t.Fatalf("nobody's = %+v, %v", none, err)
	}
}

// TestLockOwners reads the bookings of the ids it knows, with what a release of their locks needs, and leaves
// out the rest.
func TestLockOwners(t *testing.T) {
	t.Parallel()
	st := postgres.New(pgtest.New(t))
	ctx := context.Background()
	sh := seedShow(t, st)
	a := hold(t, st, sh.ID, 1, "A1", "A2")
	b := hold(t, st, sh.ID, 2, "B1")
	if _, err := st.Cancel(ctx, b.ID, b.UserID); err != nil {
		t.Fatal(err)
	}
	got, err := st.LockOwners(ctx, []string{a.ID, "bk_nobody", b.ID})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]booking.Booking{}
	for _, g := range got {
		byID[g.ID] = g
	}
	wantA := booking.Booking{ID: a.ID, UserID: a.UserID, ShowID: sh.ID, Status: booking.StatusHeld, SeatIDs: []string{"A1", "A2"}}
	wantB := booking.Booking{ID: b.ID, UserID: b.UserID, ShowID: sh.ID, Status: booking.StatusCancelled, SeatIDs: []string{"B1"}}
	if len(got) != 2 || !reflect.DeepEqual(byID[a.ID], wantA) || !reflect.DeepEqual(byID[b.ID], wantB) {
		t.Fatalf("lock owners = %+v, want %+v and %+v", got, wantA, wantB)
	}
	if none, err := st.LockOwners(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("no ids = %+v, %v", none, err)
	}
}
