package driver_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// Listen delivers channel and pattern messages, says when it is ready, and after Redis restarts tells the reader
// that it resubscribed (what was published meanwhile is lost) and goes on delivering.
func TestListen(t *testing.T) {
	t.Parallel()
	r := storetest.StartRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	msgs := make(chan string, 16)
	resubscribed := make(chan struct{}, 4)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		driver.Listen(ctx, rdb, driver.Listener{
			Channels:     []string{"news"},
			Patterns:     []string{"seat:*"},
			Message:      func(m *goredis.Message) { msgs <- m.Channel + "=" + m.Payload },
			Resubscribed: func() { resubscribed <- struct{}{} },
			Ready:        ready,
		})
	}()
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s", what)
		}
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-msgs:
			if got != want {
				t.Fatalf("message %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no message %q", want)
		}
	}
	wait("ready", ready)
	rdb.Publish(ctx, "news", "1")
	expect("news=1")
	rdb.Publish(ctx, "seat:s1", "2")
	expect("seat:s1=2")
	select {
	case <-resubscribed:
		t.Fatal("resubscribed without a lost connection")
	default:
	}

	r.Kill()
	r.Start()
	wait("resubscription", resubscribed)
	// Both subscriptions are back: one callback per reconnection, and messages flow again.
	deadline := time.Now().Add(30 * time.Second)
	for got := ""; got != "news=3"; {
		if time.Now().After(deadline) {
			t.Fatal("no message after the restart")
		}
		rdb.Publish(ctx, "news", "3")
		select {
		case got = <-msgs:
		case <-time.After(100 * time.Millisecond):
		}
	}
	for len(msgs) > 0 { // the retries' extra copies
		<-msgs
	}
	rdb.Publish(ctx, "seat:s2", "4")
	expect("seat:s2=4")
	if n := len(resubscribed); n != 0 {
		t.Fatalf("%d more resubscription calls for one restart", n)
	}

	cancel()
	wait("return after cancel", done)
}
