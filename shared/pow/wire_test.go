package pow

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzWire holds the fast reader to encoding/json: whatever it reads, encoding/json reads the same from the same
// bytes, so the fast path accepts nothing the protocol's JSON would not.
func FuzzWire(f *testing.F) {
	for _, s := range []string{
		`{"algorithm":"SHA-256","challenge":"ab","number":12,"salt":"x?a=1\u0026b=2\u0026","signature":"cd","took":3}`,
		` { "Algorithm" : "SHA-256" , "NUMBER" : 0 , "extra" : true , "more": null, "n": -4 } `,
		`{"salt":"a\"b\\c\/d\n\t"}`,
		`{"number":1.5}`, `{"number":"1"}`, `{"salt":1}`, `{"x":{"y":1}}`, `{}`, `{"salt":"\u00e9"}`, "{\"salt\":\"\xff\"}", `{"ſalt":"x"}`,
		`{"number":01}`, `{"number":-0}`, `{"number":9223372036854775807}`, `{"salt":null}`, `{"took":1e3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, ok := fast(b, make([]byte, 0, len(b)))
		if !ok {
			return
		}
		var p payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("fast read %q, encoding/json refused it: %v", b, err)
		}
		if string(w.algorithm) != p.Algorithm || string(w.challenge) != p.Challenge || string(w.salt) != p.Salt ||
			string(w.signature) != p.Signature || w.number != p.Number || w.took != p.Took {
			t.Fatalf("%q: fast read %+v, encoding/json %+v", b, w, p)
		}
	})
}

// TestWireShapes: the shapes clients send are read by the fast path, and the rest by encoding/json alike.
func TestWireShapes(t *testing.T) {
	for _, tc := range []struct {
		in       string
		fast, ok bool
	}{
		{`{"algorithm":"SHA-256","challenge":"c","number":7,"salt":"s?x=1\u0026","signature":"g","took":5}`, true, true},
		{`{"number":7,"took":5.5}`, false, false}, // took is whole milliseconds, as encoding/json reads it
		{`{"number":7,"meta":{"a":1}}`, false, true},
		{`{"salt":"\ud83d\ude00"}`, false, true},
		{`{"number":"7"}`, false, false},
		{`{"number":7`, false, false},
		{`{"number":7}x`, false, false},
	} {
		_, fastOK := fast([]byte(tc.in), nil)
		_, ok := read([]byte(tc.in), nil)
		if fastOK != tc.fast || ok != tc.ok {
			t.Errorf("%s: fast %v read %v, want fast %v read %v", tc.in, fastOK, ok, tc.fast, tc.ok)
		}
	}
	w, _ := fast([]byte(`{"salt":"a\u0026b"}`), nil)
	if !bytes.Equal(w.salt, []byte("a&b")) {
		t.Errorf("escape: got %q", w.salt)
	}
}
