package admission

import "time"

// Queue event types: a show's queue entering a phase that fans and operators care about. They travel on the
// lifecycle event stream (docs/EVENTS.md) from the record's queue outbox.
const (
	EventQueueOpened  = "queue.opened"
	EventQueuePaused  = "queue.paused"
	EventQueueSoldOut = "queue.sold_out"
	EventQueueClosed  = "queue.closed"
)

// Phases of a show's queue as the record keeps them: the waiting room's phase names (waitroom.Phase), plus
// PhaseUnknown. The record holds the phase it last recorded for each show, so that a change is announced once
// however many replicas see it.
const (
	PhaseUnknown = ""         // nothing recorded yet, or a switch-on whose phase only the next tick can tell
	PhaseOpen    = "open"     // admitting
	PhasePaused  = "paused"   // the operator paused admission
	PhaseSoldOut = "sold_out" // no seat free or held
	PhaseClosed  = "closed"   // queue off, or the sale closed
)

// PhaseEvent is the event a queue entering phase announces; "" for the phases that have none (the pre-opening
// ones, PhaseUnknown).
func PhaseEvent(phase string) string {
	switch phase {
	case PhaseOpen:
		return EventQueueOpened
	case PhasePaused:
		return EventQueuePaused
	case PhaseSoldOut:
		return EventQueueSoldOut
	case PhaseClosed:
		return EventQueueClosed
	}
	return ""
}

// SettingsPhase is the phase an operator's change of settings from old to now puts a queue in, given the phase
// recorded before; ok is false when the change alone does not decide it. Switching off closes the queue; pausing
// an admitting queue pauses it and resuming a paused one opens it. Switching on, or pausing or resuming a queue
// that is sold out or not open yet, depends on the show's seats and clock, which only the admission tick sees:
// a switch-on records PhaseUnknown, so that the first tick after it announces what it finds.
func SettingsPhase(old, now Settings, recorded string) (phase string, ok bool) {
	switch {
	case !now.Enabled:
		return PhaseClosed, old.Enabled && recorded != PhaseClosed
	case !old.Enabled:
		return PhaseUnknown, recorded != PhaseUnknown
	case now.Paused && !old.Paused:
		return PhasePaused, recorded == PhaseOpen
	case !now.Paused && old.Paused:
		return PhaseOpen, recorded == PhasePaused
	}
	return "", false
}

// PhaseChange is a phase an admission tick found a show's queue in, with the counts it saw.
type PhaseChange struct {
	Show  string
	Phase string    // a waitroom.Phase value
	At    time.Time // the tick's time: an observation older than the phase recorded is stale and ignored
	// Counts at the tick, carried in the event.
	Waiting, Active, AdmittedTotal int64
}
