package app

import (
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/waitroom"
)

// events reads the lifecycle event stream's settings (EVENTS_STREAM, EVENTS_MAXLEN, EVENTS_MAX_AGE) and the
// queue outbox relay's (EVENTS_RELAY_INTERVAL, EVENTS_OUTBOX_KEEP): the same variables booking reads, since both
// relay their outboxes into one stream.
func (l *loader) events(cfg *Config) {
	cfg.Events = eventstream.Config{Key: l.String("EVENTS_STREAM", eventstream.DefaultKey),
		MaxLen: int64(l.Int("EVENTS_MAXLEN", 100_000)), MaxAge: l.Duration("EVENTS_MAX_AGE", 0)}
	if cfg.Events.MaxLen < 100 {
		l.Fail("EVENTS_MAXLEN must be at least 100")
	}
	cfg.EventsRelayEvery = l.Duration("EVENTS_RELAY_INTERVAL", 100*time.Millisecond)
	cfg.EventsOutboxKeep = l.Duration("EVENTS_OUTBOX_KEEP", 72*time.Hour)
	if cfg.EventsRelayEvery < time.Millisecond || cfg.EventsOutboxKeep < time.Minute {
		l.Fail("EVENTS_RELAY_INTERVAL must be at least 1ms and EVENTS_OUTBOX_KEEP at least 1m")
	}
}

// phaseTicks tells w of every admission tick of this replica (waitroom.Options.Observe) that ran: the phase it
// found, with its counts. Detecting and recording the change is the admission domain's (admission.PhaseWatch).
func phaseTicks(w *admission.PhaseWatch) func(waitroom.TickResult, time.Duration, error) {
	return func(snap waitroom.TickResult, _ time.Duration, err error) {
		if err != nil {
			return
		}
		w.Observe(admission.PhaseChange{Show: snap.Show, Phase: string(snap.Phase), At: snap.At,
			Waiting: snap.Waiting, Active: snap.Active, AdmittedTotal: snap.AdmittedTotal})
	}
}

// observeBoth calls every non-nil observer of a tick.
func observeBoth(fs ...func(waitroom.TickResult, time.Duration, error)) func(waitroom.TickResult, time.Duration, error) {
	return func(s waitroom.TickResult, d time.Duration, err error) {
		for _, f := range fs {
			if f != nil {
				f(s, d, err)
			}
		}
	}
}
