package admission_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// phaseLog is a phase record that remembers what it was told.
type phaseLog struct {
	mu   sync.Mutex
	told []string
	fail bool
}

func (p *phaseLog) RecordPhase(_ context.Context, c admission.PhaseChange) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.told = append(p.told, c.Show+":"+c.Phase)
	if p.fail {
		return false, errors.New("postgres down")
	}
	return true, nil
}

// TestPhaseWatch: a replica tells the record of a show's phase when it changes, when it has not told it for the
// recheck interval (an operator's switch off and on between two ticks leaves the record waiting for a phase this
// replica never saw change), and again at the next tick after the record failed; not at every tick.
func TestPhaseWatch(t *testing.T) {
	rec := &phaseLog{}
	nudged := 0
	w := admission.NewPhaseWatch(rec, func() { nudged++ }, slog.New(slog.DiscardHandler))
	w.Recheck = time.Hour
	tick := func(show, phase string) {
		w.Observe(admission.PhaseChange{Show: show, Phase: phase, At: time.Now()})
	}
	tick("a", admission.PhaseOpen)
	tick("a", admission.PhaseOpen)
	tick("b", admission.PhaseOpen)
	tick("a", admission.PhaseSoldOut)
	tick("a", admission.PhaseSoldOut)
	tick("", admission.PhaseOpen) // no show: ignored
	rec.fail = true
	tick("a", admission.PhaseOpen)
	rec.fail = false
	tick("a", admission.PhaseOpen) // the record failed last time: told again
	w.Recheck = 0
	tick("a", admission.PhaseOpen) // unchanged, but the recheck is due
	want := []string{"a:open", "b:open", "a:sold_out", "a:open", "a:open", "a:open"}
	if !slices.Equal(rec.told, want) {
		t.Fatalf("the record was told %v, want %v", rec.told, want)
	}
	if nudged != 5 {
		t.Fatalf("the relay was nudged %d times, want 5 (once per recorded change)", nudged)
	}
}
