package booking

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// Lifecycle event types. Each is written in the transaction that made it true (an outbox: booking's, or the
// admission record's for the queue events) and relayed at least once to the event stream (eventstream.Relay);
// docs/EVENTS.md documents each one's fields. Consumers drop duplicates by LifecycleEvent.ID.
const (
	EventHeld              = "booking.held"
	EventExpired           = "booking.expired"
	EventCancelled         = "booking.cancelled"
	EventConfirmed         = "booking.confirmed"
	EventRefunded          = "booking.refunded"
	EventPaymentAuthorized = "payment.authorized"
	EventPaymentDeclined   = "payment.declined"
	EventCheckedIn         = "ticket.checked_in"
	EventTransferSent      = "ticket.transfer_sent"
	EventTransferClaimed   = "ticket.transferred"
	EventTransferCancelled = "ticket.transfer_cancelled"
	EventResold            = "ticket.resold" // a listing sold on the exchange: the seller's payout is due
	EventWaitlistOffered   = "waitlist.offered"
	EventWaitlistAccepted  = "waitlist.accepted"
	EventWaitlistLapsed    = "waitlist.lapsed"
	// A verified-fan wave's, written by the waiting room in the draw's transaction (one per fan it drew from).
	EventInvited    = "registration.invited"
	EventNotInvited = "registration.not_invited"
	// The queue events are the admission record's (written by the edge's waiting room).
	EventQueueOpened  = admission.EventQueueOpened
	EventQueuePaused  = admission.EventQueuePaused
	EventQueueSoldOut = admission.EventQueueSoldOut
	EventQueueClosed  = admission.EventQueueClosed
)

// outboxEventIDPrefix starts the dedupe id of an event from booking's outbox.
const outboxEventIDPrefix = "ob_"

// LifecycleEvent is one lifecycle event as the stream carries it.
type LifecycleEvent struct {
	// ID is the event's dedupe id, the same on every delivery of the event: "ob_<outbox id>" for events from the
	// outbox. A consumer that has seen an ID may drop the event.
	ID      string
	Type    string
	ShowID  string
	Subject string // what the event is about: a booking id, a ticket id, a waitlist entry
	At      time.Time
	Data    json.RawMessage // the type's fields (docs/EVENTS.md), always a JSON object with showId
}

// Lifecycle turns an outbox row into the stream's event. The show comes from the payload, which every event type
// carries, so the outbox table needs no column of its own for it.
func (e OutboxEvent) Lifecycle() LifecycleEvent {
	var p struct {
		ShowID string `json:"showId"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return LifecycleEvent{ID: outboxEventIDPrefix + strconv.FormatInt(e.ID, 10), Type: e.Type, ShowID: p.ShowID,
		Subject: e.AggregateID, At: e.CreatedAt.UTC(), Data: json.RawMessage(e.Payload)}
}
