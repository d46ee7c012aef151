package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/redis"
)

// testEventStream is an event stream key of the test's own, deleted when it ends.
func testEventStream(t testing.TB) string {
	key := "{flashseat:events-test}:" + booking.NewID("")
	rdb := bookingtest.Redis(t)
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	return key
}

// eventLog is what a consumer group of the test saw on a stream.
type eventLog struct {
	mu  sync.Mutex
	evs []booking.LifecycleEvent
}

// watchEvents reads stream through a consumer group of the test's own until the test ends.
func watchEvents(t testing.TB, stream string) *eventLog {
	return watchEventsOn(t, bookingtest.Redis(t), stream)
}

func watchEventsOn(t testing.TB, rdb goredis.UniversalClient, stream string) *eventLog {
	l := &eventLog{}
	c := redis.NewConsumer(rdb, redis.ConsumerConfig{Stream: stream, Group: "test", Name: "t",
		Block: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, func(_ context.Context, e booking.LifecycleEvent) error {
			l.mu.Lock()
			l.evs = append(l.evs, e)
			l.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// find returns the first event of typ about subject.
func (l *eventLog) find(subject, typ string) (booking.LifecycleEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.evs {
		if e.Subject == subject && e.Type == typ {
			return e, true
		}
	}
	return booking.LifecycleEvent{}, false
}

// wait waits up to 10s for an event of typ about subject.
func (l *eventLog) wait(t testing.TB, subject, typ string) booking.LifecycleEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, ok := l.find(subject, typ); ok {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for %s", typ, subject)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
