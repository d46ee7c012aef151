package admission_test

import (
	"testing"

	"github.com/flashseat/flashseat/shared/admission"
)

// TestSettingsPhase: an operator's change records the phase it decides alone, and leaves the rest to the tick.
func TestSettingsPhase(t *testing.T) {
	off := admission.DefaultSettings()
	on := off
	on.Enabled = true
	paused := on
	paused.Paused = true
	faster := on
	faster.AdmitPerSecond = 50
	tests := []struct {
		name      string
		old, now  admission.Settings
		recorded  string
		wantPhase string
		wantOK    bool
	}{
		{"switch off an open queue", on, off, admission.PhaseOpen, admission.PhaseClosed, true},
		{"switch off a paused queue", paused, off, admission.PhasePaused, admission.PhaseClosed, true},
		{"switch off a queue whose sale was closed", on, off, admission.PhaseClosed, admission.PhaseClosed, false},
		{"settings changed while off", off, off, admission.PhaseUnknown, admission.PhaseClosed, false},
		{"switch on: the tick tells", off, on, admission.PhaseClosed, admission.PhaseUnknown, true},
		{"switch on, nothing recorded", off, on, admission.PhaseUnknown, admission.PhaseUnknown, false},
		{"switch on paused: the tick tells", off, paused, admission.PhaseClosed, admission.PhaseUnknown, true},
		{"pause an open queue", on, paused, admission.PhaseOpen, admission.PhasePaused, true},
		{"pause a sold-out queue", on, paused, admission.PhaseSoldOut, admission.PhasePaused, false},
		{"pause a queue not open yet", on, paused, "pre", admission.PhasePaused, false},
		{"resume a paused queue", paused, on, admission.PhasePaused, admission.PhaseOpen, true},
		{"resume a sold-out queue", paused, on, admission.PhaseSoldOut, admission.PhaseOpen, false},
		{"rate change while open", on, faster, admission.PhaseOpen, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phase, ok := admission.SettingsPhase(tt.old, tt.now, tt.recorded)
			if ok != tt.wantOK || (ok && phase != tt.wantPhase) {
				t.Fatalf("SettingsPhase = %q, %v; want %q, %v", phase, ok, tt.wantPhase, tt.wantOK)
			}
		})
	}
}

// TestPhaseEvent: the announced phases have an event each; the pre-opening ones and "unknown" have none.
func TestPhaseEvent(t *testing.T) {
	for phase, want := range map[string]string{admission.PhaseOpen: "queue.opened", admission.PhasePaused: "queue.paused",
		admission.PhaseSoldOut: "queue.sold_out", admission.PhaseClosed: "queue.closed", "pre": "", "pending": "",
		admission.PhaseUnknown: ""} {
		if got := admission.PhaseEvent(phase); got != want {
			t.Errorf("PhaseEvent(%q) = %q, want %q", phase, got, want)
		}
	}
}
