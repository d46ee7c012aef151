package driver

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// Listener says what Listen subscribes to and whom it tells.
type Listener struct {
	Channels []string // SUBSCRIBE to these
	Patterns []string // and PSUBSCRIBE to these
	// Message is called with each message, one at a time, on Listen's goroutine.
	Message func(*goredis.Message)
	// Resubscribed, if set, is called each time go-redis has restored the subscription after its connection
	// dropped (a Redis restart, a network blip). go-redis resubscribes by itself, but what was published while
	// the connection was down is lost: a reader that keeps state from the messages reloads it here.
	Resubscribed func()
	// Ready, if set, is closed once Redis has confirmed every channel and pattern the first time: from then on
	// nothing published is missed.
	Ready chan struct{}
}

// Listen subscribes rdb as l says and hands each message to l.Message until ctx ends, then closes the
// subscription. It is the one subscribe loop of the services: every pub/sub reader goes through it, so a lost
// connection is handled in one place. Listen also returns when the subscription is closed under it (rdb closed).
func Listen(ctx context.Context, rdb goredis.UniversalClient, l Listener) {
	// SUBSCRIBE goes out now; Redis's confirmations are read below, with the messages.
	var ps *goredis.PubSub
	if len(l.Channels) > 0 || len(l.Patterns) == 0 {
		ps = rdb.Subscribe(ctx, l.Channels...)
		if len(l.Patterns) > 0 {
			_ = ps.PSubscribe(ctx, l.Patterns...) // a failure is retried by go-redis's reconnect
		}
	} else {
		ps = rdb.PSubscribe(ctx, l.Patterns...)
	}
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions()
	want := len(l.Channels) + len(l.Patterns)
	// round holds what has been confirmed since the last (re)connection: a second confirmation of one name means
	// the connection was replaced and everything is being subscribed again.
	round := make(map[string]bool, want)
	ready := l.Ready
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *goredis.Message:
				l.Message(m)
			case *goredis.Subscription:
				if m.Kind != "subscribe" && m.Kind != "psubscribe" {
					continue
				}
				if round[m.Channel] {
					clear(round)
					if ready == nil && l.Resubscribed != nil {
						l.Resubscribed()
					}
				}
				round[m.Channel] = true
				if ready != nil && len(round) >= want {
					close(ready)
					ready = nil
				}
			}
		}
	}
}
