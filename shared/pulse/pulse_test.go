package pulse_test

import (
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/pulse"
)

func TestWindow(t *testing.T) {
	w := pulse.NewWindow(5 * time.Second)
	now := time.Now()
	w.Observe(true, 201, 900*time.Millisecond, now.Add(-10*time.Second)) // out of the window
	for i := range 100 {
		w.Observe(true, 201, time.Duration(i+1)*time.Millisecond, now)
	}
	w.Observe(false, 503, time.Millisecond, now)
	w.Observe(false, 500, time.Millisecond, now)
	r := w.Report("r1", "closed", now)
	if r.Holds != 100 || r.HoldP99Ms != 99 || r.Requests != 102 || r.Errors5xx != 2 || r.Unavailable != 1 {
		t.Fatalf("report: got %+v", r)
	}
	m := pulse.Merge([]pulse.Report{r, {Replica: "r2", At: now, HoldP99Ms: 300, Holds: 5, Requests: 10, Breaker: "open"}})
	if m.HoldP99Ms != 300 || m.Requests != 112 || m.Breaker != "open" {
		t.Fatalf("merge: got %+v", m)
	}
}
