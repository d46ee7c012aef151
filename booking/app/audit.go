package app

import (
	"context"
	"encoding/json"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/audit"
)

// Fans' ticket transfers go in the operator audit log beside the operators' own changes, so an operator answering
// "who has my ticket now?" reads it where every other change is. They are recorded from the event stream (the
// "audit" consumer group) rather than by the request that made them: the event exists exactly when the transfer
// committed, on whichever database shard, and the log keeps one entry per event id however often it is delivered.

// auditedEvents are the event types the audit group records, each with the payload field naming the fan who
// acted.
var auditedEvents = map[string]string{
	booking.EventTransferSent:      "userId",
	booking.EventTransferClaimed:   "toUserId",
	booking.EventTransferCancelled: "userId",
}

// auditActorPrefix marks a fan as the actor, apart from operators (named by the console) and "api".
const auditActorPrefix = "fan "

// recordTransfers returns the audit group's handler.
func recordTransfers(log *audit.Log) func(ctx context.Context, e booking.LifecycleEvent) error {
	return func(ctx context.Context, e booking.LifecycleEvent) error {
		field, ok := auditedEvents[e.Type]
		if !ok {
			return nil
		}
		var p map[string]any
		_ = json.Unmarshal(e.Data, &p) // a payload without the field is still recorded, its actor unnamed
		actor, _ := p[field].(string)
		return log.Record(ctx, audit.Entry{At: e.At, Actor: auditActorPrefix + actor, Action: e.Type, ShowID: e.ShowID,
			New: e.Data, EventID: e.ID})
	}
}
