package holdbody

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode holds Decode to encoding/json: it reads every body as json.Unmarshal into a Request does and
// refuses every body it refuses, with the same error. Its hand-written reader, which most bodies take, is held to
// the same on its own: whatever it accepts, json.Unmarshal accepts too and reads the same way.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"showId":"sh_1","seatIds":["A1","A2"]}`,
		" {\n\t\"seatIds\" : [ \"A1\" ] , \"showId\" : \"sh_1\" }\r\n",
		`{"showId":"sh_1"}`, `{"seatIds":["A1"]}`, `{}`, `{"showId":"sh_1","seatIds":[]}`,
		`{"showId":"sh_1","showId":"sh_2","seatIds":["A1"]}`, `{"ShowID":"sh_1","seatIds":["A1"]}`,
		`{"showId":"sh_\u0031","seatIds":["A1"]}`, `{"showId":"sh_1","seatIds":["A1"]}{}`,
		`{"showId":"sh_1","seatIds":["A1",]}`, `{"showId":"sh_1","seatIds":"A1"}`, `{"showId":12}`,
		`{"showId":"sh_1","seatIds":null}`, `{"showId":"é","seatIds":["A1"]}`, `{"showId":"sh_1",}`, `[1]`, ``,
		`null`, `{"seatIds":[1]}`, `{"showId":"sh_1","seatIds":["A1"],"extra":{}}`, ` {"showId":"a\"b"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want Request
		wantErr := json.Unmarshal(b, &want)
		got, err := Decode(b)
		switch {
		case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
			t.Fatalf("%q: Decode's error %v, encoding/json's %v", b, err, wantErr)
		case err != nil && !reflect.DeepEqual(got, Request{}):
			t.Fatalf("%q: Decode failed and still read %+v", b, got)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%q: Decode read %+v, encoding/json %+v", b, got, want)
		}
		fast, ok := parse(b)
		if !ok {
			return
		}
		if wantErr != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", b, wantErr)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: fast path read %+v, encoding/json %+v", b, fast, want)
		}
	})
}

func TestParseDeclines(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{}`, `{"showId":"sh_1","seatIds":[]}`, `{"showId":"sh_1","showId":"sh_2"}`, `{"SHOWID":"sh_1"}`,
		`{"showId":"a\"b"}`, `{"showId":"sh_1"} x`, `{"showId":"sh_1","seatIds":null}`, `{"showId":"é"}`,
		`{"other":1,"showId":"sh_1"}`,
	} {
		if got, ok := parse([]byte(s)); ok {
			t.Errorf("%s: accepted as %+v; encoding/json must decide it", s, got)
		}
	}
	got, ok := parse([]byte(" {\"seatIds\" : [\"A1\", \"A2\"],\n\"showId\":\"sh_1\"} "))
	if !ok || got.ShowID != "sh_1" || !reflect.DeepEqual(got.SeatIDs, []string{"A1", "A2"}) {
		t.Fatalf("got %+v %v", got, ok)
	}
}

// BenchmarkDecode is Decode on a hold-storm body against, as the baseline in the same run, its hand-written
// reader alone: the fallback must cost the plain shape nothing.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"showId":"sh_146d22e7bc1523ebd22b9921d8df9c87","seatIds":["C12","C13","C14"]}`)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r, err := Decode(body); err != nil || r.ShowID == "" {
				b.Fatal("no show")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r, ok := parse(body); !ok || r.ShowID == "" {
				b.Fatal("no show")
			}
		}
	})
}
