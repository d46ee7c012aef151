package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/shard"
)

// TestMoveShow moves a show with a confirmed booking, a live hold and a waitlist entry from one shard to
// another: afterwards the new shard answers for all of it and the old one keeps none of it; the seat sold stays
// sold on the new shard.
func TestMoveShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	catalog, oldPool, newPool := pgtest.New(t), pgtest.New(t), pgtest.New(t)
	cat, from, to := postgres.New(catalog), postgres.New(oldPool), postgres.New(newPool)
	sh := seedShow(t, cat)
	other := seedShow(t, cat) // stays on the old shard
	for _, s := range []string{sh.ID, other.ID} {
		if err := postgres.CopyShowCatalog(ctx, catalog, oldPool, s); err != nil {
			t.Fatal(err)
		}
	}
	newHold := func(st *postgres.Store, show string, seat string) booking.Booking {
		b := booking.Booking{ID: shard.ID("bk_", show), UserID: "u1", ShowID: show, SeatIDs: []string{seat},
			Currency: "INR", Fence: 1, ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now()}
		if err := st.CreateHold(ctx, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	sold := newHold(from, sh.ID, "A1")
	if _, err := from.Confirm(ctx, sold.ID); err != nil {
		t.Fatal(err)
	}
	held := newHold(from, sh.ID, "A2")
	kept := newHold(from, other.ID, "A1")
	if _, err := from.JoinWaitlist(ctx, booking.WaitlistJoin{ShowID: sh.ID, UserID: "u2", Seats: 1}, time.Now()); err != nil {
		t.Fatal(err)
	}

	n, err := postgres.MoveShow(ctx, catalog, oldPool, newPool, sh.ID)
	if err != nil || n < 6 { // 2 bookings, 2 fences, 1 sold seat, 1 entry, outbox events
		t.Fatalf("MoveShow = %d, %v", n, err)
	}
	for _, id := range []string{sold.ID, held.ID} {
		if _, err := from.Booking(ctx, id); !errors.Is(err, booking.ErrNotFound) {
			t.Fatalf("old shard still has booking %s: %v", id, err)
		}
	}
	if b, err := to.Booking(ctx, sold.ID); err != nil || b.Status != booking.StatusConfirmed {
		t.Fatalf("new shard: %+v %v", b, err)
	}
	if s, err := to.SoldSeats(ctx, sh.ID); err != nil || len(s) != 1 || s[0] != "A1" {
		t.Fatalf("new shard's sold seats %v %v", s, err)
	}
	if e, err := to.WaitlistEntry(ctx, sh.ID, "u2"); err != nil || e.Status != booking.WaitlistWaiting {
		t.Fatalf("new shard's waitlist %+v %v", e, err)
	}
	if _, err := to.Confirm(ctx, held.ID); err != nil {
		t.Fatalf("the moved hold does not confirm on the new shard: %v", err)
	}
	if _, err := from.Booking(ctx, kept.ID); err != nil {
		t.Fatalf("the other show's booking left the old shard: %v", err)
	}
	var left int
	if err := oldPool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox WHERE payload ->> 'showId' = $1)
		+ (SELECT count(*) FROM waitlist WHERE show_id = $1)`, sh.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("old shard keeps %d rows of the show (%v)", left, err)
	}
	// Moving again finds nothing to move and changes nothing.
	if n, err := postgres.MoveShow(ctx, catalog, oldPool, newPool, sh.ID); err != nil || n != 0 {
		t.Fatalf("second move = %d, %v", n, err)
	}
}
