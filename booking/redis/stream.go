package redis

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// Hub fans a show's seat events out to this process's stream clients: one Redis subscription per show however
// many clients watch it, and a bounded buffer per client. A client that falls behind is cut off (its channel is
// closed) rather than allowed to hold up the others; it reconnects and reloads the seat map.
type Hub struct {
	rdb     redis.UniversalClient
	channel func(showID string) string // the show's pub/sub channel

	mu    sync.Mutex
	shows map[string]*feed
}

type feed struct {
	stop context.CancelFunc // ends the feed's subscription
	subs map[chan []byte]struct{}
}

// NewHub returns a hub of the shows' seat events on rdb.
func NewHub(rdb redis.UniversalClient) *Hub {
	return &Hub{rdb: rdb, channel: rediskey.SeatEvents, shows: map[string]*feed{}}
}

// subBuffer is how many events a client may lag behind before it is cut off.
const subBuffer = 256

// Subscribe returns a channel of the show's events (seat events: JSON {"seatId","status"}) and a function to stop. The
// channel is closed when the client fell behind or the hub's subscription was interrupted (a dropped connection
// loses what was published meanwhile): either way the client reconnects and reloads the seat map.
func (h *Hub) Subscribe(ctx context.Context, showID string) (<-chan []byte, func()) {
	ch := make(chan []byte, subBuffer)
	h.mu.Lock()
	f, ok := h.shows[showID]
	if !ok {
		fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		f = &feed{stop: stop, subs: map[chan []byte]struct{}{}}
		ready := make(chan struct{})
		go h.pump(fctx, showID, f, ready)
		// Wait for Redis to confirm the subscription, so that a client who reads the seat map after its stream
		// opened misses no change in between.
		select {
		case <-ready:
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		h.shows[showID] = f
	}
	f.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() { h.drop(showID, f, ch) }
}

func (h *Hub) drop(showID string, f *feed, ch chan []byte) {
	h.mu.Lock()
	if _, ok := f.subs[ch]; ok {
		delete(f.subs, ch)
		close(ch)
	}
	last := len(f.subs) == 0 && h.shows[showID] == f
	if last {
		delete(h.shows, showID)
	}
	h.mu.Unlock()
	if last {
		f.stop() // ends pump
	}
}

// pump fans the show's messages out to its clients until the feed is stopped, cutting off a client that falls
// behind, and every client when the subscription was interrupted.
func (h *Hub) pump(ctx context.Context, showID string, f *feed, ready chan struct{}) {
	cutAll := func() {
		h.mu.Lock()
		for ch := range f.subs {
			delete(f.subs, ch)
			close(ch)
		}
		h.mu.Unlock()
	}
	driver.Listen(ctx, h.rdb, driver.Listener{Channels: []string{h.channel(showID)}, Ready: ready,
		Message: func(msg *redis.Message) {
			b := []byte(msg.Payload)
			h.mu.Lock()
			for ch := range f.subs {
				select {
				case ch <- b:
				default:
					delete(f.subs, ch)
					close(ch)
				}
			}
			h.mu.Unlock()
		},
		Resubscribed: cutAll,
	})
	// The subscription ended: close whoever is still listening so they reconnect.
	cutAll()
	h.mu.Lock()
	if h.shows[showID] == f {
		delete(h.shows, showID)
	}
	h.mu.Unlock()
}

// Close ends every subscription.
func (h *Hub) Close() {
	h.mu.Lock()
	fs := h.shows
	h.shows = map[string]*feed{}
	h.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
}

// WatchSeatEvents calls fn for every seat event of every show, from one pattern subscription, until ctx ends.
// Booking replicas use it to keep their seat snapshots current with each other's claims and releases.
func WatchSeatEvents(ctx context.Context, rdb redis.UniversalClient, fn func(showID string, ev booking.SeatEvent)) {
	driver.Listen(ctx, rdb, driver.Listener{Patterns: []string{rediskey.SeatEvents("*")}, Message: func(msg *redis.Message) {
		show, ok := parseSeatEventsChannel(msg.Channel)
		if !ok {
			return
		}
		var ev booking.SeatEvent
		if err := json.Unmarshal([]byte(msg.Payload), &ev); err != nil || ev.SeatID == "" {
			return
		}
		fn(show, ev)
	}})
}

// parseSeatEventsChannel extracts the show id from a rediskey.SeatEvents channel name.
func parseSeatEventsChannel(ch string) (string, bool) {
	prefix, suffix := rediskey.SeatEvents("\x00")[:len("{show:")], rediskey.SeatEvents("\x00")[len("{show:")+1:]
	rest, ok := strings.CutPrefix(ch, prefix)
	if !ok {
		return "", false
	}
	show, ok := strings.CutSuffix(rest, suffix)
	return show, ok && show != ""
}
