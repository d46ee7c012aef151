package env

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"S": "  text ", "BLANK": "   ", "LIST": " a, b ,,c ,",
		"D": "1m30s", "D0": "0", "DNEG": "-1s", "DBAD": "soon",
		"I": "42", "INEG": "-3", "IBAD": "1.5", "IHIGH": "101",
		"F": "0.25", "FNEG": "-1", "FNAN": "NaN",
		"B": "true", "B1": "1", "BBAD": "maybe",
	}
	tests := []struct {
		name string
		read func(r *Reader) any
		want any
		bad  bool // a problem is recorded
	}{
		{"string trimmed", func(r *Reader) any { return r.String("S", "d") }, "text", false},
		{"string unset", func(r *Reader) any { return r.String("NONE", "d") }, "d", false},
		{"string blank", func(r *Reader) any { return r.String("BLANK", "d") }, "d", false},
		{"list", func(r *Reader) any { return strings.Join(r.List("LIST"), "|") }, "a|b|c", false},
		{"list unset", func(r *Reader) any { return r.List("NONE") == nil }, true, false},
		{"duration", func(r *Reader) any { return r.Duration("D", time.Second) }, 90 * time.Second, false},
		{"duration unset", func(r *Reader) any { return r.Duration("NONE", time.Second) }, time.Second, false},
		{"duration zero", func(r *Reader) any { return r.Duration("D0", time.Second) }, time.Duration(0), false},
		{"duration negative", func(r *Reader) any { return r.Duration("DNEG", time.Second) }, time.Second, true},
		{"duration junk", func(r *Reader) any { return r.Duration("DBAD", time.Second) }, time.Second, true},
		{"positive", func(r *Reader) any { return r.PositiveDuration("D", time.Second) }, 90 * time.Second, false},
		{"positive zero", func(r *Reader) any { return r.PositiveDuration("D0", time.Second) }, time.Second, true},
		{"int", func(r *Reader) any { return r.Int("I", 7) }, 42, false},
		{"int negative", func(r *Reader) any { return r.Int("INEG", 7) }, -3, false},
		{"int junk", func(r *Reader) any { return r.Int("IBAD", 7) }, 7, true},
		{"positive int", func(r *Reader) any { return r.PositiveInt("I", 7) }, 42, false},
		{"positive int unset", func(r *Reader) any { return r.PositiveInt("NONE", 7) }, 7, false},
		{"positive int zero", func(r *Reader) any { return r.PositiveInt("D0", 7) }, 7, true},
		{"positive int negative", func(r *Reader) any { return r.PositiveInt("INEG", 7) }, 7, true},
		{"positive int junk", func(r *Reader) any { return r.PositiveInt("IBAD", 7) }, 7, true},
		{"int in range", func(r *Reader) any { return r.IntIn("I", 7, 1, 100) }, 42, false},
		{"int above range", func(r *Reader) any { return r.IntIn("IHIGH", 7, 1, 100) }, 7, true},
		{"int below range", func(r *Reader) any { return r.IntIn("INEG", 7, 1, 100) }, 7, true},
		{"int in, unset", func(r *Reader) any { return r.IntIn("NONE", 7, 1, 100) }, 7, false},
		{"float", func(r *Reader) any { return r.Float("F", 1) }, 0.25, false},
		{"float negative", func(r *Reader) any { return r.Float("FNEG", 1) }, 1.0, true},
		{"float NaN", func(r *Reader) any { return r.Float("FNAN", 1) }, 1.0, true},
		{"bool", func(r *Reader) any { return r.Bool("B", false) }, true, false},
		{"bool 1", func(r *Reader) any { return r.Bool("B1", false) }, true, false},
		{"bool unset", func(r *Reader) any { return r.Bool("NONE", true) }, true, false},
		{"bool junk", func(r *Reader) any { return r.Bool("BBAD", false) }, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(func(k string) string { return vars[k] })
			if got := tc.read(r); got != tc.want {
				t.Fatalf("got %v (%T), want %v (%T)", got, got, tc.want, tc.want)
			}
			if err := r.Err(); (err != nil) != tc.bad {
				t.Fatalf("Err() = %v, want a problem: %v", err, tc.bad)
			}
		})
	}
}

// Every problem is reported at once, each naming its variable.
func TestReaderCollects(t *testing.T) {
	t.Parallel()
	r := New(func(k string) string { return map[string]string{"A": "x", "B": "y"}[k] })
	r.Duration("A", 0)
	r.Int("B", 0)
	r.Fail("C and D disagree")
	var joined interface{ Unwrap() []error }
	err := r.Err()
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
		t.Fatalf("Err() = %v, want three problems", err)
	}
	for _, name := range []string{"A:", "B:", "C and D"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name %s", err, name)
		}
	}
	if err := New(func(string) string { return "" }).Err(); err != nil {
		t.Fatalf("Err() with nothing wrong = %v", err)
	}
}
