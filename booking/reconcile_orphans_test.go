package booking_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// releaseFails is Redis whose release never answers, as when the release after a cancel timed out.
type releaseFails struct {
	*redis.Locks
}

func (releaseFails) Release(context.Context, booking.Booking) ([]string, error) {
	return nil, errors.New("redis: release: i/o timeout")
}

// TestReconcileReleasesOrphanLocks: a sweep releases the locks no live booking holds (an unknown booking's lock
// older than any hold's insert can be or with no expiry, a CANCELLED, EXPIRED or REFUNDED booking's), publishes their seats as AVAILABLE and
// rewrites ShowInfo; it keeps an unknown booking's fresh lock (its insert may be under way) and the locks of
// HELD, PAYMENT_PENDING and CONFIRMED bookings.
func TestReconcileReleasesOrphanLocks(t *testing.T) {
	t.Parallel()
	// The default 10-minute hold TTL; a cap of 3 seats, so the cancelled fan's lingering cap entry would show.
	e := bookingtest.New(t, booking.Config{MaxSeats: 3})
	ctx := context.Background()
	show := e.Show.ID
	const ttl = 10 * time.Minute
	lock := func(seat, value string, left time.Duration) {
		t.Helper()
		if err := e.RDB.Set(ctx, rediskey.Seat(show, seat), value, left).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lockOf := func(seat string) string {
		v, _ := e.RDB.Get(ctx, rediskey.Seat(show, seat)).Result()
		return v
	}
	hold := func(user string, seats ...string) booking.Booking {
		t.Helper()
		b, _, err := e.Svc.Hold(ctx, booking.HoldRequest{UserID: user, ShowID: show, SeatIDs: seats})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	setStatus := func(b booking.Booking, st booking.Status) {
		t.Helper()
		if _, err := e.Pool.Exec(ctx, `UPDATE bookings SET status = $2 WHERE id = $1`, b.ID, st); err != nil {
			t.Fatal(err)
		}
	}

	// A claim whose reply timed out a minute ago: its hold failed and wrote no row.
	lock("A1", "bk_lost|7", ttl-time.Minute)
	lock("A2", "bk_lost|7", ttl-time.Minute)
	// A claim made a moment ago whose row may still be on its way.
	lock("A3", "bk_fresh|8", ttl-time.Second)
	// A lock of an unknown booking with no expiry at all (no claim makes one): nothing will ever free it.
	lock("A4", "bk_forever|9", 0)
	hold("u1", "B1")
	pending := hold("u2", "B2")
	setStatus(pending, booking.StatusPaymentPending)
	confirmed := hold("u3", "B3")
	setStatus(confirmed, booking.StatusConfirmed)
	expired := hold("u4", "B4")
	setStatus(expired, booking.StatusExpired)
	refunded := hold("u6", "B7")
	setStatus(refunded, booking.StatusRefunded)
	cancelled := hold("u5", "B5", "B6")
	if _, _, err := booking.New(e.Store, releaseFails{e.Locks}, nil, booking.Config{}).Cancel(ctx, cancelled.ID, "u5"); err != nil {
		t.Fatal(err)
	}
	if lockOf("B5") == "" {
		t.Fatal("the cancel's failed release left no lock to sweep")
	}
	kept := map[string]string{"A3": lockOf("A3"), "B1": lockOf("B1"), "B2": lockOf("B2"), "B3": lockOf("B3")}

	sub := e.RDB.Subscribe(ctx, rediskey.SeatEvents(show))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	e.Svc.Reconcile(ctx)

	for _, seat := range []string{"A1", "A2", "A4", "B4", "B5", "B6", "B7"} {
		if v := lockOf(seat); v != "" {
			t.Errorf("seat %s still locked by %q", seat, v)
		}
	}
	for seat, want := range kept {
		if got := lockOf(seat); got != want || got == "" {
			t.Errorf("seat %s locked by %q, want %q kept", seat, got, want)
		}
	}
	want := map[string]bool{"A1": true, "A2": true, "A4": true, "B4": true, "B5": true, "B6": true, "B7": true}
	timeout := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case m := <-sub.Channel():
			var ev booking.SeatEvent
			if err := json.Unmarshal([]byte(m.Payload), &ev); err == nil && ev.Status == booking.SeatAvailable {
				delete(want, ev.SeatID)
			}
		case <-timeout:
			t.Fatalf("no AVAILABLE event for %v", want)
		}
	}
	info, err := e.RDB.HGetAll(ctx, rediskey.ShowInfo(show)).Result()
	if err != nil || info[rediskey.InfoHeld] != "4" || info[rediskey.InfoAvailable] != "196" {
		t.Fatalf("show info after the sweep = %v (%v), want 4 held and 196 available", info, err)
	}
	// The seats are on sale again, the cancelled fan's cap entry included.
	hold("u9", "A1", "A2")
	hold("u5", "B5", "B6")
}

// reclaimingLocks runs between once, after the sweep read the locks and before it releases any.
type reclaimingLocks struct {
	*redis.Locks
	once    sync.Once
	between func()
}

func (l *reclaimingLocks) SeatLocks(ctx context.Context, showID string, seatIDs []string) ([]booking.SeatLock, error) {
	locks, err := l.Locks.SeatLocks(ctx, showID, seatIDs)
	l.once.Do(l.between)
	return locks, err
}

// TestReconcileOrphanReleaseIsFenced: when the orphan's lock lapses and another fan claims the seat between the
// sweep's read and its release, the release (compare-and-delete on booking and fence) leaves the new lock alone.
func TestReconcileOrphanReleaseIsFenced(t *testing.T) {
	t.Parallel()
	e := bookingtest.New(t, booking.Config{})
	ctx := context.Background()
	key := rediskey.Seat(e.Show.ID, "C1")
	if err := e.RDB.Set(ctx, key, "bk_lost|5", 9*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	var fresh booking.Booking
	racing := &reclaimingLocks{Locks: e.Locks, between: func() {
		e.RDB.Del(ctx, key)
		var err error
		if fresh, _, err = e.Svc.Hold(ctx, booking.HoldRequest{UserID: "u2", ShowID: e.Show.ID, SeatIDs: []string{"C1"}}); err != nil {
			t.Errorf("hold of the lapsed seat: %v", err)
		}
	}}
	booking.New(e.Store, racing, nil, booking.Config{}).Reconcile(ctx)
	got, err := e.RDB.Get(ctx, key).Result()
	if want := fresh.ID + "|" + strconv.FormatInt(fresh.Fence, 10); err != nil || got != want {
		t.Fatalf("lock after the sweep = %q (%v), want the new hold's %q", got, err, want)
	}
}
