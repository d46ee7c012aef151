package http

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/problem"
)

// TestConflictBody: the hand-written 409 body says what the generic problem rendering would.
func TestConflictBody(t *testing.T) {
	t.Parallel()
	for _, ce := range []*booking.ConflictError{
		{Unavailable: []string{"A1"}, Alternatives: []string{"A2", "A3"}},
		{Unavailable: []string{"q\"uo\\te", "ctl\x01\n"}, Alternatives: []string{}},
		{Unavailable: []string{"ü"}, Alternatives: nil},
	} {
		var got, want map[string]any
		if err := json.Unmarshal(appendConflict(nil, ce), &got); err != nil {
			t.Fatalf("%s: %v", appendConflict(nil, ce), err)
		}
		p := problem.New(409, problem.SeatsUnavailable, "some of the seats are held or sold").
			With("unavailable", nonNil(ce.Unavailable)).With("alternatives", nonNil(ce.Alternatives))
		b, _ := json.Marshal(p)
		_ = json.Unmarshal(b, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
