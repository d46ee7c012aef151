package edge

import (
	"testing"
)

func TestReplayable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method string
		key    bool
		want   bool
	}{
		{"GET", false, true},
		{"HEAD", false, true},
		{"OPTIONS", false, true},
		{"TRACE", false, true},
		{"PUT", false, true},
		{"DELETE", false, true},
		{"POST", false, false},
		{"PATCH", false, false},
		{"POST", true, true},
		{"PATCH", true, true},
		{"get", false, false}, // methods are case-sensitive (RFC 9110 section 9.1)
	} {
		if got := Replayable(tc.method, tc.key); got != tc.want {
			t.Errorf("Replayable(%s, idempotency key %v) = %v, want %v", tc.method, tc.key, got, tc.want)
		}
	}
}
