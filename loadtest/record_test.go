package loadtest

import (
	"testing"
	"time"
)

func TestRunAddMergesParts(t *testing.T) {
	r := &Run{}
	r.Add(&Part{Fans: []*Fan{{ID: 0}, {ID: 1}}, Steps: map[Step][]Sample{StepJoin: {{At: time.Second}}},
		NoSeatsAt: 9 * time.Second, StreamFailures: 1})
	r.Add(&Part{Fans: []*Fan{{ID: 2}}, Steps: map[Step][]Sample{StepJoin: {{At: 2 * time.Second}}, StepHold: {{}}},
		StreamFailures: 2})
	r.Add(&Part{NoSeatsAt: 7 * time.Second})
	if len(r.Fans) != 3 || len(r.Steps[StepJoin]) != 2 || len(r.Steps[StepHold]) != 1 {
		t.Errorf("got %d fans, %d joins, %d holds, want 3, 2, 1", len(r.Fans), len(r.Steps[StepJoin]), len(r.Steps[StepHold]))
	}
	if r.NoSeatsAt != 7*time.Second || r.StreamFailures != 3 {
		t.Errorf("got no seats at %s and %d stream failures, want the earliest (7s) and the sum (3)", r.NoSeatsAt, r.StreamFailures)
	}
}
