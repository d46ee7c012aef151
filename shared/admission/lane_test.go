package admission_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/shared/admission"
)

// TestLanes: lanes read and write as a JSON list, validate by name and share, map names (and no name, and a name
// gone) to their index, and survive the cache's plain copy.
func TestLanes(t *testing.T) {
	t.Parallel()
	var l admission.Lanes
	if err := json.Unmarshal([]byte(`[{"name":"fanclub","share":0.7},{"name":"general","share":0.3}]`), &l); err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(l); string(b) != `[{"name":"fanclub","share":0.7},{"name":"general","share":0.3}]` {
		t.Errorf("marshal: %s", b)
	}
	if b, _ := json.Marshal(admission.Lanes{}); string(b) != `[]` {
		t.Errorf("no lanes marshal as %s", b)
	}
	for name, want := range map[string]int{"fanclub": 0, "general": 1, "": 1, "gone": 1} {
		if got := l.Index(name); got != want {
			t.Errorf("Index(%q) = %d, want %d", name, got, want)
		}
	}
	if back := admission.ParseLanes(l.String()); back != l {
		t.Errorf("ParseLanes(%q) = %v", l.String(), back)
	}
	if l.Count() != 2 || (admission.Lanes{}).Count() != 1 || !l.Has("fanclub") || l.Has("vip") {
		t.Error("Count or Has")
	}
	for _, c := range []struct{ name, json, field string }{
		{"duplicate", `[{"name":"general","share":0.5},{"name":"general","share":0.5}]`, "lanes[1].name"},
		{"sum", `[{"name":"a","share":0.5},{"name":"general","share":0.4}]`, "sum to 1"},
		{"no general", `[{"name":"a","share":1}]`, "general"},
		{"share over 1", `[{"name":"a","share":-1},{"name":"general","share":2}]`, "lanes[0].share"},
		{"name", `[{"name":"A B","share":0.5},{"name":"general","share":0.5}]`, "lanes[0].name"},
	} {
		var bad admission.Lanes
		if err := json.Unmarshal([]byte(c.json), &bad); err != nil {
			t.Fatal(err)
		}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
	if err := json.Unmarshal([]byte(`[`+strings.Repeat(`{"name":"a","share":0.1},`, 8)+`{"name":"general","share":0.2}]`), &l); err == nil {
		t.Error("nine lanes read")
	}
	st := admission.DefaultSettings()
	st.Partitions, st.Lanes = 40, admission.ParseLanes("fanclub:0.7,general:0.3")
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "lanes") {
		t.Errorf("80 lines: %v, want an error naming lanes", err)
	}
}
