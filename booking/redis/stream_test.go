package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestHubSlowClient: a client that stops reading is cut off, and the others get every event on time.
func TestHubSlowClient(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	hub := redis.NewHub(rdb)
	defer hub.Close()
	show := booking.NewID("sh_")
	ctx := context.Background()
	fast, stopFast := hub.Subscribe(ctx, show)
	defer stopFast()
	slow, stopSlow := hub.Subscribe(ctx, show)
	defer stopSlow()
	time.Sleep(100 * time.Millisecond) // the subscription reaches Redis
	const n = 600
	got := make(chan int)
	go func() {
		count := 0
		for range fast {
			count++
			if count == n {
				break
			}
		}
		got <- count
	}()
	for i := range n {
		if err := rdb.Publish(ctx, rediskey.SeatEvents(show), fmt.Sprintf(`{"seatId":"A%d","status":"HELD"}`, i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case c := <-got:
		if c != n {
			t.Fatalf("fast client got %d events, want %d", c, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fast client was held up")
	}
	// The slow client's buffer filled up and it was disconnected.
	drained := 0
	for range slow {
		drained++
	}
	if drained >= n {
		t.Fatalf("slow client kept all %d events", drained)
	}
}

func TestParseSeatKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, show, seat string
		ok              bool
	}{
		{rediskey.Seat("sh_1", "A1"), "sh_1", "A1", true},
		{rediskey.Fence("sh_1"), "", "", false},
		{"{show:}:seat:A1", "", "", false},
		{"other", "", "", false},
	}
	for _, tc := range tests {
		show, seat, ok := redis.ParseSeatKey(tc.key)
		if ok != tc.ok || (ok && (show != tc.show || seat != tc.seat)) {
			t.Errorf("%q: got %q %q %v", tc.key, show, seat, ok)
		}
	}
}

// TestWatchExpiries: a seat lock expiring in Redis is reported (when keyspace notifications are on).
func TestWatchExpiries(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if v, _ := rdb.ConfigGet(ctx, "notify-keyspace-events").Result(); v["notify-keyspace-events"] == "" {
		t.Skip("keyspace notifications are off")
	}
	show := booking.NewID("sh_")
	got := make(chan string, 1)
	go redis.WatchExpiries(ctx, rdb, func(s, seat string) {
		if s == show {
			got <- seat
		}
	})
	time.Sleep(100 * time.Millisecond)
	key := rediskey.Seat(show, "C3")
	rdb.Set(ctx, key, "bk|1", 50*time.Millisecond)
	// Redis reports an expiry when it notices it: on access, or when its active cycle samples the key, which
	// on a Redis full of other volatile keys can take a while. Touch the key to make it notice.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case seat := <-got:
			if seat != "C3" {
				t.Fatalf("expired %q", seat)
			}
			return
		case <-tick.C:
			rdb.Get(ctx, key)
		case <-deadline:
			t.Fatal("no expiry reported")
		}
	}
}

func TestWatchSeatEvents(t *testing.T) {
	t.Parallel()
	rdb := bookingtest.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	show := booking.NewID("sh_")
	got := make(chan booking.SeatEvent, 1)
	go redis.WatchSeatEvents(ctx, rdb, func(s string, ev booking.SeatEvent) {
		if s == show {
			got <- ev
		}
	})
	time.Sleep(100 * time.Millisecond)
	rdb.Publish(ctx, rediskey.SeatEvents(show), `{"seatId":"B7","status":"HELD"}`)
	select {
	case ev := <-got:
		if ev.SeatID != "B7" || ev.Status != booking.SeatHeld {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
}
