package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
)

// TestStoreDownSettings: an operator sets what a show's queue does while its store is down; GET answers it, a
// partial body keeps the other member, every change of it is audited with the old and new policy, and a bad one
// is a 422 problem naming the field, changing nothing.
func TestStoreDownSettings(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 5, 100)
	get := func() admission.StoreDown {
		t.Helper()
		res, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, "")
		var out struct {
			WhenStoreDown admission.StoreDown `json:"whenStoreDown"`
		}
		if res.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("get queue: %d %s", res.StatusCode, b)
		}
		return out.WhenStoreDown
	}
	if got, want := get(), admission.DefaultStoreDown(); got != want {
		t.Fatalf("default whenStoreDown %+v, want %+v", got, want)
	}
	put := func(body string) (int, []byte) {
		t.Helper()
		res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body,
			audit.OperatorHeader, "Ravi")
		return res.StatusCode, b
	}
	if st, b := put(`{"whenStoreDown":{"policy":"trickle","admitPerSecond":2.5}}`); st != 200 {
		t.Fatalf("trickle: %d %s", st, b)
	}
	if got := get(); got != (admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: 2.5}) {
		t.Fatalf("after trickle: %+v", got)
	}
	if st, b := put(`{"whenStoreDown":{"admitPerSecond":4}}`); st != 200 {
		t.Fatalf("rate alone: %d %s", st, b)
	}
	if got := get(); got != (admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: 4}) {
		t.Fatalf("after the rate alone: %+v", got)
	}

	for _, c := range []struct{ name, body, field string }{
		{"unknown policy", `{"whenStoreDown":{"policy":"open"}}`, "whenStoreDown.policy"},
		{"empty policy", `{"whenStoreDown":{"policy":""}}`, "whenStoreDown.policy"},
		{"negative rate", `{"whenStoreDown":{"admitPerSecond":-1}}`, "whenStoreDown.admitPerSecond"},
		{"zero rate", `{"whenStoreDown":{"policy":"trickle","admitPerSecond":0}}`, "whenStoreDown.admitPerSecond"},
		{"huge rate", `{"whenStoreDown":{"admitPerSecond":1e9}}`, "whenStoreDown.admitPerSecond"},
		{"rate out of float range", `{"whenStoreDown":{"admitPerSecond":1e999}}`, "whenStoreDown"},
		{"policy of another type", `{"whenStoreDown":{"policy":1}}`, "whenStoreDown"},
		{"not an object", `{"whenStoreDown":"trickle"}`, "whenStoreDown"},
		{"a misspelt member", `{"whenStoreDown":{"polcy":"trickle"}}`, "whenStoreDown.polcy"},
	} {
		st, b := put(c.body)
		var p problem.Problem
		if st != 422 || json.Unmarshal(b, &p) != nil || p.Type != problem.TypeBase+problem.Validation ||
			!strings.Contains(p.Detail, c.field) {
			t.Errorf("%s: %d %s, want 422 %s naming %s", c.name, st, b, problem.Validation, c.field)
		}
	}
	if got := get(); got != (admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: 4}) {
		t.Fatalf("after the refused changes: %+v", got)
	}
	if st, b := put(`{"whenStoreDown":{"policy":"closed"}}`); st != 200 {
		t.Fatalf("closed: %d %s", st, b)
	}

	entries, err := audit.New(wrtest.Database(t)).List(context.Background(), audit.Filter{ShowID: show})
	if err != nil {
		t.Fatal(err)
	}
	var policies []string // old -> new, oldest first
	for _, e := range entries {
		var old, now admission.Settings
		if e.Action != "queue.settings" || json.Unmarshal(e.Old, &old) != nil || json.Unmarshal(e.New, &now) != nil {
			continue
		}
		if old.WhenStoreDown != now.WhenStoreDown {
			if e.Actor != "Ravi" {
				t.Errorf("change audited as %q", e.Actor)
			}
			policies = append([]string{old.WhenStoreDown.Policy + "->" + now.WhenStoreDown.Policy}, policies...)
		}
	}
	if got, want := strings.Join(policies, " "), "closed->trickle trickle->trickle trickle->closed"; got != want {
		t.Fatalf("audited changes of whenStoreDown: %s, want %s", got, want)
	}
}
