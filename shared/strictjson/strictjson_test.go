package strictjson_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/strictjson"
)

type inner struct {
	Base int64 `json:"baseDifficulty"`
}

type Embedded struct {
	Cooldown int `json:"cooldownSeconds"`
}

type target struct {
	Rate   *float64         `json:"admitPerSecond"`
	Bot    inner            `json:"botProtection"`
	Rows   []inner          `json:"rows"`
	Prices map[string]int64 `json:"prices"`
	ByName map[string]inner `json:"byName"`
	Raw    json.RawMessage  `json:"raw"`
	At     time.Time        `json:"at"`
	Skip   string           `json:"-"`
	Plain  string
	Embedded
}

func TestUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		unknown    []string
	}{
		{"known fields", `{"admitPerSecond":5,"botProtection":{"baseDifficulty":3},"rows":[{"baseDifficulty":1}],` +
			`"prices":{"GOLD":1},"raw":{"anything":1},"at":"2026-01-01T00:00:00Z","Plain":"x","cooldownSeconds":2}`, nil},
		{"case folded like encoding/json", `{"AdmitPerSecond":5,"plain":"x"}`, nil},
		{"top level", `{"admitPerSecnd":50}`, []string{"admitPerSecnd"}},
		{"nested", `{"botProtection":{"baseDificulty":1}}`, []string{"botProtection.baseDificulty"}},
		{"in an array", `{"rows":[{},{"base":1}]}`, []string{"rows[1].base"}},
		{"in a map's value", `{"byName":{"a":{"x":1}}}`, []string{"byName.a.x"}},
		{"a field json skips", `{"Skip":"x"}`, []string{"Skip"}},
		{"every one, sorted", `{"z":1,"a":2,"botProtection":{"q":1}}`, []string{"a", "botProtection.q", "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got target
			err := strictjson.Unmarshal([]byte(tc.body), &got)
			var ue *strictjson.UnknownFieldError
			switch {
			case tc.unknown == nil && err != nil:
				t.Fatalf("err %v, want none", err)
			case tc.unknown != nil && !errors.As(err, &ue):
				t.Fatalf("err %v, want an UnknownFieldError", err)
			case tc.unknown != nil && !slices.Equal(ue.Paths, tc.unknown):
				t.Fatalf("paths %q, want %q", ue.Paths, tc.unknown)
			case tc.unknown != nil && got.Rate != nil:
				t.Fatalf("the target was written despite the refusal: %+v", got)
			}
		})
	}
}

// TestUnmarshalAt names a member's unknown fields under its path, and leaves malformed JSON and wrong types to
// encoding/json's errors.
func TestUnmarshalAt(t *testing.T) {
	var in inner
	var ue *strictjson.UnknownFieldError
	if err := strictjson.UnmarshalAt("botProtection", []byte(`{"baseDificulty":1}`), &in); !errors.As(err, &ue) ||
		ue.Paths[0] != "botProtection.baseDificulty" {
		t.Fatalf("err %v", err)
	}
	var te *json.UnmarshalTypeError
	if err := strictjson.Unmarshal([]byte(`{"baseDifficulty":"x"}`), &in); !errors.As(err, &te) {
		t.Fatalf("wrong type: err %v", err)
	}
	var se *json.SyntaxError
	if err := strictjson.Unmarshal([]byte(`{"baseDifficulty":`), &in); !errors.As(err, &se) {
		t.Fatalf("malformed: err %v", err)
	}
}
