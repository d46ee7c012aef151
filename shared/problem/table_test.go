package problem_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/flashseat/flashseat/shared/problem"
)

func TestTable(t *testing.T) {
	errSpecific := errors.New("svc: specific")
	errGeneral := errors.New("svc: general")
	table := problem.Table{
		problem.Map(errSpecific, 409, problem.Conflict, "Specific."),
		problem.Map(errGeneral, 400, problem.BadRequest, ""),
	}
	for _, tc := range []struct {
		name       string
		err        error
		found      bool
		status     int
		wantDetail string
	}{
		{"the row's detail", fmt.Errorf("ctx: %w", errSpecific), true, 409, "Specific."},
		{"first match wins", fmt.Errorf("%w: %w", errSpecific, errGeneral), true, 409, "Specific."},
		{"the error's own words past its sentinel", fmt.Errorf("%w: seat Z9", errGeneral), true, 400, "seat Z9"},
		{"no row", errors.New("other"), false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := table.Match(tc.err)
			if ok != tc.found {
				t.Fatalf("Match: got found %v, want %v", ok, tc.found)
			}
			if !ok {
				return
			}
			if p := r.Problem(tc.err); p.Status != tc.status || p.Detail != tc.wantDetail {
				t.Fatalf("problem: got %d %q, want %d %q", p.Status, p.Detail, tc.status, tc.wantDetail)
			}
		})
	}
}
