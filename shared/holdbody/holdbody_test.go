package holdbody

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse holds the hand-written reader of hold bodies to encoding/json: whatever it accepts,
// json.Unmarshal accepts too and reads the same way; what it declines goes to json.Unmarshal anyway.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"showId":"sh_1","seatIds":["A1","A2"]}`,
		" {\n\t\"seatIds\" : [ \"A1\" ] , \"showId\" : \"sh_1\" }\r\n",
		`{"showId":"sh_1"}`, `{"seatIds":["A1"]}`, `{}`, `{"showId":"sh_1","seatIds":[]}`,
		`{"showId":"sh_1","showId":"sh_2","seatIds":["A1"]}`, `{"ShowID":"sh_1","seatIds":["A1"]}`,
		`{"showId":"sh_\u0031","seatIds":["A1"]}`, `{"showId":"sh_1","seatIds":["A1"]}{}`,
		`{"showId":"sh_1","seatIds":["A1",]}`, `{"showId":"sh_1","seatIds":"A1"}`, `{"showId":12}`,
		`{"showId":"sh_1","seatIds":null}`, `{"showId":"é","seatIds":["A1"]}`, `{"showId":"sh_1",}`, `[1]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := Parse(b)
		if !ok {
			return
		}
		var want Request
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path read %+v, encoding/json %+v", b, got, want)
		}
	})
}

func TestParseDeclines(t *testing.T) {
	for _, s := range []string{
		`{}`, `{"showId":"sh_1","seatIds":[]}`, `{"showId":"sh_1","showId":"sh_2"}`, `{"SHOWID":"sh_1"}`,
		`{"showId":"a\"b"}`, `{"showId":"sh_1"} x`, `{"showId":"sh_1","seatIds":null}`, `{"showId":"é"}`,
		`{"other":1,"showId":"sh_1"}`,
	} {
		if got, ok := Parse([]byte(s)); ok {
			t.Errorf("%s: accepted as %+v; encoding/json must decide it", s, got)
		}
	}
	got, ok := Parse([]byte(" {\"seatIds\" : [\"A1\", \"A2\"],\n\"showId\":\"sh_1\"} "))
	if !ok || got.ShowID != "sh_1" || !reflect.DeepEqual(got.SeatIDs, []string{"A1", "A2"}) {
		t.Fatalf("got %+v %v", got, ok)
	}
}
