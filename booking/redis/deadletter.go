package redis

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/eventstream"
)

// DeadLetter is an entry a consumer group gave up on, as moved to the dead-letter stream.
type DeadLetter struct {
	Group      string
	EntryID    string // the entry's id in the event stream
	EventID    string // its dedupe id ("" when it was not an event)
	Type       string
	Reason     string // reasonDeliveries or reasonUndecodable
	Deliveries int64
}

// Why an entry goes to the dead-letter stream.
const (
	reasonDeliveries  = "max-deliveries" // delivered MaxDeliveries times without being acknowledged
	reasonUndecodable = "undecodable"    // not an event: no handler can take it
)

// Fields a dead-letter entry adds to the original entry's.
const (
	fieldDeadGroup      = "dead_group"
	fieldDeadEntry      = "dead_entry"
	fieldDeadReason     = "dead_reason"
	fieldDeadDeliveries = "dead_deliveries"
)

// deadLetterMaxLen bounds the dead-letter stream (approximately, like the event stream).
const deadLetterMaxLen = 10_000

// sift returns the entries just taken over that may be handled again, and moves those delivered more than
// MaxDeliveries times to the dead-letter stream. The delivery counts come from the group's pending list, which
// XAUTOCLAIM has just incremented, read in one pipelined round trip.
func (c *Consumer) sift(ctx context.Context, msgs []redis.XMessage) []redis.XMessage {
	if len(msgs) == 0 {
		return msgs
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.XPendingExtCmd, len(msgs))
	for i, m := range msgs {
		cmds[i] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: c.cfg.Stream, Group: c.cfg.Group,
			Start: m.ID, End: m.ID, Count: 1})
	}
	if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
		c.log.WarnContext(ctx, "event consumer: delivery counts", "err", err)
		return msgs // handled once more; the count is read again at the next take-over
	}
	keep := msgs[:0:0]
	for i, m := range msgs {
		p, err := cmds[i].Result()
		if err != nil || len(p) == 0 || p[0].RetryCount <= c.cfg.MaxDeliveries {
			keep = append(keep, m)
			continue
		}
		c.deadLetter(ctx, m, reasonDeliveries, p[0].RetryCount)
	}
	return keep
}

// deadLetter appends m, with why and how often it was delivered, to the dead-letter stream, then acknowledges it
// in the event stream: in that order, so a crash in between leaves it pending (and dead-lettered again later,
// twice at worst) rather than lost.
func (c *Consumer) deadLetter(ctx context.Context, m redis.XMessage, reason string, deliveries int64) {
	ctx = context.WithoutCancel(ctx)
	values := make([]any, 0, 2*len(m.Values)+8)
	for k, v := range m.Values {
		values = append(values, k, v)
	}
	values = append(values, fieldDeadGroup, c.cfg.Group, fieldDeadEntry, m.ID, fieldDeadReason, reason,
		fieldDeadDeliveries, strconv.FormatInt(deliveries, 10))
	if err := c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: c.cfg.DeadLetter, MaxLen: deadLetterMaxLen, Approx: true,
		Values: values}).Err(); err != nil {
		c.log.WarnContext(ctx, "event consumer: dead-letter", "entry", m.ID, "err", err)
		return // still pending: tried again at the next take-over
	}
	if err := c.rdb.XAck(ctx, c.cfg.Stream, c.cfg.Group, m.ID).Err(); err != nil {
		c.log.WarnContext(ctx, "event consumer: xack dead-lettered entry", "entry", m.ID, "err", err)
	}
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	d := DeadLetter{Group: c.cfg.Group, EntryID: m.ID, EventID: str(eventstream.FieldID),
		Type: str(eventstream.FieldType), Reason: reason, Deliveries: deliveries}
	c.log.ErrorContext(ctx, "event moved to the dead-letter stream", "stream", c.cfg.DeadLetter, "entry", d.EntryID,
		"event", d.EventID, "type", d.Type, "reason", d.Reason, "deliveries", d.Deliveries)
	if c.cfg.OnDeadLetter != nil {
		c.cfg.OnDeadLetter(d)
	}
}
