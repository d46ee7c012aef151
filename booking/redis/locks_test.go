package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestSeatLocksForOrphanSweep: SeatLocks reads every lock of the seats asked for, over more than one batch, with
// its booking, fence and time left (negative without an expiry), skips free seats and values it did not write;
// and the release the sweep makes of what it read deletes a lock only while it carries the same booking and fence.
func TestSeatLocksForOrphanSweep(t *testing.T) {
	t.Parallel()
	rdb := redistest.New(t).Client
	ctx := context.Background()
	show := booking.NewID("sh_")
	t.Cleanup(func() { _ = redistest.DeleteShow(context.Background(), rdb, show) })
	seats := make([]string, 2500)
	for i := range seats {
		seats[i] = booking.SeatID("S", i+1)
	}
	set := func(seat, value string, ttl time.Duration) {
		t.Helper()
		if err := rdb.Set(ctx, rediskey.Seat(show, seat), value, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set("S1", "bk_a|11", time.Minute)
	set("S2", "bk_a|11", time.Minute)
	set("S1500", "bk_b|12", 30*time.Second)
	set("S2500", "bk_c|13", 0) // no expiry
	set("S7", "not a lock", time.Minute)
	l := redis.New(rdb)
	got, err := l.SeatLocks(ctx, show, seats)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]booking.SeatLock{
		"S1":    {SeatID: "S1", BookingID: "bk_a", Fence: 11, TTL: time.Minute},
		"S2":    {SeatID: "S2", BookingID: "bk_a", Fence: 11, TTL: time.Minute},
		"S1500": {SeatID: "S1500", BookingID: "bk_b", Fence: 12, TTL: 30 * time.Second},
		"S2500": {SeatID: "S2500", BookingID: "bk_c", Fence: 13, TTL: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("locks = %+v, want %d", got, len(want))
	}
	for _, g := range got {
		w, ok := want[g.SeatID]
		if !ok || g.BookingID != w.BookingID || g.Fence != w.Fence {
			t.Fatalf("lock %+v, want %+v", g, w)
		}
		if w.TTL < 0 && g.TTL >= 0 || w.TTL > 0 && (g.TTL > w.TTL || g.TTL < w.TTL-5*time.Second) {
			t.Fatalf("lock %+v: time left %v, want about %v", g, g.TTL, w.TTL)
		}
	}

	// A release with another fence (the seat was claimed again) deletes nothing; with the lock's own, it frees it.
	stale := booking.Booking{ID: "bk_a", ShowID: show, SeatIDs: []string{"S1", "S2"}, Fence: 10}
	if freed, err := l.Release(ctx, stale); err != nil || len(freed) != 0 {
		t.Fatalf("stale release freed %v (%v)", freed, err)
	}
	stale.Fence = 11
	if freed, err := l.Release(ctx, stale); err != nil || len(freed) != 2 {
		t.Fatalf("release freed %v (%v), want S1 and S2", freed, err)
	}
	if n, err := rdb.Exists(ctx, rediskey.Seat(show, "S1"), rediskey.Seat(show, "S2")).Result(); err != nil || n != 0 {
		t.Fatalf("%d locks left (%v)", n, err)
	}
}

// TestClaimSentAgain: the Redis client sends a script again when its reply timed out. The claim's second run must
// answer as the first did, with the first run's fence, not report the seats (its own) as taken: the hold would
// fail and leave its locks for a booking never written. Another booking's claim of the same seats is still refused.
func TestClaimSentAgain(t *testing.T) {
	t.Parallel()
	rdb, l, show := epochShow(t, 7)
	ctx := context.Background()
	c := booking.Claim{ShowID: show, BookingID: "bk_1", UserID: "u1", SeatIDs: []string{"A1", "A2"},
		TTL: time.Minute, Now: time.Now(), UserCap: 10}
	first, err := l.Claim(ctx, c)
	if err != nil || !first.OK {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	again, err := l.Claim(ctx, c)
	if err != nil || !again.OK || again.Fence != first.Fence {
		t.Fatalf("the same claim again: %+v, %v; want OK with fence %d", again, err, first.Fence)
	}
	other := c
	other.BookingID, other.UserID = "bk_2", "u2"
	if res, err := l.Claim(ctx, other); err != nil || res.OK || len(res.Taken) != 2 {
		t.Fatalf("another booking's claim: %+v, %v; want both seats taken", res, err)
	}
	// One of the two seats lapsed and was claimed by someone else: the claim is not repeated.
	if err := rdb.Del(ctx, rediskey.Seat(show, "A2")).Err(); err != nil {
		t.Fatal(err)
	}
	if res, err := l.Claim(ctx, booking.Claim{ShowID: show, BookingID: "bk_3", UserID: "u3", SeatIDs: []string{"A2"},
		TTL: time.Minute, Now: time.Now(), UserCap: 10}); err != nil || !res.OK {
		t.Fatalf("claim of the lapsed seat: %+v, %v", res, err)
	}
	if res, err := l.Claim(ctx, c); err != nil || res.OK || len(res.Taken) != 2 {
		t.Fatalf("the first claim once half of it lapsed: %+v, %v; want both seats reported taken", res, err)
	}
}

// TestResaleClaim: the resale claim takes only a sold seat nobody holds, leaves it in the sold set throughout, and
// its release announces the seat BOOKED (the seller's again), not AVAILABLE; an ordinary claim of the seat is
// refused all along, and a resale claim of a seat on sale is refused too.
func TestResaleClaim(t *testing.T) {
	t.Parallel()
	rdb, l, show := epochShow(t, 3, "A1")
	ctx := context.Background()
	claim := func(id string, seat string, resale bool) booking.ClaimResult {
		t.Helper()
		res, err := l.Claim(ctx, booking.Claim{ShowID: show, BookingID: id, UserID: "u-" + id, SeatIDs: []string{seat},
			TTL: time.Minute, Now: time.Now(), UserCap: 10, Resale: resale})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := claim("bk_1", "A1", false); res.OK {
		t.Fatal("an ordinary claim took a sold seat")
	}
	if res := claim("bk_2", "A2", true); res.OK {
		t.Fatal("a resale claim took a seat on sale")
	}
	res := claim("bk_3", "A1", true)
	if !res.OK {
		t.Fatalf("resale claim of the sold seat: %+v", res)
	}
	if again := claim("bk_4", "A1", true); again.OK {
		t.Fatal("a second resale claim took the held seat")
	}
	sub := rdb.Subscribe(ctx, rediskey.SeatEvents(show))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	freed, err := l.Release(ctx, booking.Booking{ID: "bk_3", UserID: "u-bk_3", ShowID: show, SeatIDs: []string{"A1"}, Fence: res.Fence})
	if err != nil || len(freed) != 1 {
		t.Fatalf("release freed %v (%v)", freed, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != `{"seatId":"A1","status":"BOOKED"}` {
		t.Fatalf("release announced %v (%v), want A1 BOOKED", msg, err)
	}
	if sold, err := rdb.SIsMember(ctx, redis.SoldKey(show), "A1").Result(); err != nil || !sold {
		t.Fatalf("A1 in the sold set after the release: %v (%v)", sold, err)
	}
	if res := claim("bk_5", "A1", false); res.OK {
		t.Fatal("an ordinary claim took the sold seat after the resale hold's release")
	}
}

// epochShow is a fresh show with a fencing epoch and the given seats sold, its keys deleted after the test.
func epochShow(t *testing.T, epoch int64, sold ...string) (goredis.UniversalClient, *redis.Locks, string) {
	t.Helper()
	rdb := redistest.New(t).Client
	show := booking.NewID("sh_")
	t.Cleanup(func() { _ = redistest.DeleteShow(context.Background(), rdb, show) })
	l := redis.New(rdb)
	if err := l.SetEpoch(context.Background(), show, epoch, sold); err != nil {
		t.Fatal(err)
	}
	return rdb, l, show
}
