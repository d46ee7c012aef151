package acceptlang_test

import (
	"testing"

	"github.com/flashseat/flashseat/shared/acceptlang"
)

func TestPick(t *testing.T) {
	t.Parallel()
	m := acceptlang.New("en", "hi")
	tests := []struct {
		name, header, want string // want "": none picked
	}{
		{"none sent", "", ""},
		{"one language", "hi", "hi"},
		{"a region variant", "hi-IN", "hi"},
		{"an English region", "en-GB", "en"},
		{"case does not matter", "HI-in", "hi"},
		{"the browser's first", "hi-IN,hi;q=0.9,en;q=0.8", "hi"},
		{"by q-value, not order", "en;q=0.5, hi;q=0.9", "hi"},
		{"by q-value across regions", "en-GB;q=0.9, hi-IN;q=0.95", "hi"},
		{"a region variant first holds", "en-GB, hi", "en"},
		{"an English browser", "en-US,en;q=0.9", "en"},
		{"none offered", "fr-FR,fr;q=0.9,de;q=0.5", ""},
		{"a language whose readers read Hindi", "mr", "hi"},
		{"refused with q=0", "hi;q=0, fr", ""},
		{"refused with q=0.000", "hi;q=0.000", ""},
		{"only refusals", "hi;q=0, en;q=0", ""},
		{"refused, the next offered", "hi;q=0, en;q=0.3", "en"},
		{"a star alone", "*", ""},
		{"a star after a language", "*;q=0.5, hi", "hi"},
		{"spaces and empty entries", " hi ,, en;q=0.1 ", "hi"},
		{"malformed", ";;;,,q=x", ""},
		{"a bad weight", "hi;q=abc, en", ""},
		{"an unknown subtag", "hi, zz", ""},
		{"a cut-off tag", "hi, en-", ""},
		{"private use", "x-klingon", ""},
		{"undetermined", "und", ""},
		{"bytes not text", "\xff\xfe", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := m.Pick(tt.header)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Pick(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

// The answer is the caller's spelling of the language, whatever the header's.
func TestPickAnswersTheOfferedString(t *testing.T) {
	t.Parallel()
	if got, _ := acceptlang.New("en-US", "hi").Pick("en-GB"); got != "en-US" {
		t.Errorf("Pick(en-GB) = %q, want the offered en-US", got)
	}
}

func BenchmarkPick(b *testing.B) {
	m := acceptlang.New("en", "hi")
	for b.Loop() {
		m.Pick("en-US,en;q=0.9,hi;q=0.8")
	}
}
