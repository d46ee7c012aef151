package http

import (
	"testing"

	"github.com/google/uuid"
)

// Request ids the edge makes are version 4 UUIDs in the canonical form, and do not repeat.
func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := newRequestID()
		u, err := uuid.Parse(id)
		switch {
		case err != nil:
			t.Fatalf("%q: %v", id, err)
		case u.String() != id:
			t.Fatalf("%q is not canonical (%s)", id, u)
		case u.Version() != 4 || u.Variant() != uuid.RFC4122:
			t.Fatalf("%q: version %d, variant %s", id, u.Version(), u.Variant())
		case seen[id]:
			t.Fatalf("%q made twice", id)
		case !validRequestID([]byte(id)):
			t.Fatalf("%q would not be accepted back", id)
		}
		seen[id] = true
	}
}
