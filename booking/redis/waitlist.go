package redis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// waitlistChannel is the show's channel on which the id of a fan whose waitlist entry changed is published.
func waitlistChannel(showID string) string { return rediskey.Tag(showID) + ":waitlist-events" }

// WaitlistSignal publishes waitlist changes; it implements booking.WaitlistSignal.
type WaitlistSignal struct{ rdb redis.UniversalClient }

var _ booking.WaitlistSignal = WaitlistSignal{}

// NewWaitlistSignal returns the signal on rdb.
func NewWaitlistSignal(rdb redis.UniversalClient) WaitlistSignal { return WaitlistSignal{rdb: rdb} }

// WaitlistChanged publishes userID on the show's waitlist channel.
func (s WaitlistSignal) WaitlistChanged(ctx context.Context, showID, userID string) error {
	return s.rdb.Publish(ctx, waitlistChannel(showID), userID).Err()
}

// NewWaitlistHub returns a hub of the shows' waitlist changes: each message is the id of a fan whose entry
// changed, for the fans' open pages (one subscription per show and process, like the seat events').
func NewWaitlistHub(rdb redis.UniversalClient) *Hub {
	return &Hub{rdb: rdb, channel: waitlistChannel, shows: map[string]*feed{}}
}
