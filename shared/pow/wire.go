package pow

import (
	"bytes"
	"encoding/json"
	"math"
)

// wire is a solution payload as read off the wire: its strings are slices of one scratch buffer, so reading a
// solution allocates nothing. Verify sits on the join, the one request a crowd sends a hundred thousand times at
// once; encoding/json spent more there (two dozen allocations, most of Verify's time) than the hashes themselves.
type wire struct {
	algorithm, challenge, salt, signature []byte
	number, took                          int64
}

// read reads a wire from b, a JSON object, writing unescaped strings into scratch. A payload outside the flat shape
// ALTCHA clients send (nested values, fractions, exponents, surrogate escapes) goes through encoding/json
// instead, so what is accepted is exactly what encoding/json accepts; only the common shape is fast.
func read(b, scratch []byte) (wire, bool) {
	if w, ok := fast(b, scratch); ok {
		return w, true
	}
	var p payload
	// A copy, so that only this rare path, not every caller's buffer, goes to the heap.
	if err := json.Unmarshal(bytes.Clone(b), &p); err != nil {
		return wire{}, false
	}
	return wire{algorithm: []byte(p.Algorithm), challenge: []byte(p.Challenge), salt: []byte(p.Salt),
		signature: []byte(p.Signature), number: p.Number, took: p.Took}, true
}

// fast reads the flat object of strings and integers every ALTCHA client sends, or reports that it could not.
// Keys match case-insensitively and the last of a repeated key wins, as with encoding/json. The wire is
// returned, not written through a pointer: a store through a pointer would send both buffers to the heap.
func fast(b, scratch []byte) (w wire, ok bool) {
	r := reader{b: b}
	if !r.skip('{') {
		return w, false
	}
	if r.skip('}') {
		return w, r.end()
	}
	for {
		key, ok := r.str(nil, true)
		if !ok || !r.skip(':') {
			return w, false
		}
		r.space()
		if r.i >= len(r.b) {
			return w, false
		}
		// Fields are named by index, not by pointer, for the same reason.
		f := fieldOf(key)
		field, num := f > fieldNone && f < fieldNumber, f >= fieldNumber
		switch c := r.b[r.i]; {
		case c == '"':
			start := len(scratch)
			s, ok := r.str(scratch, false)
			if !ok || num { // a string where a number belongs: encoding/json's error to give
				return w, false
			}
			v := s[start:len(s):len(s)]
			switch f {
			case fieldAlgorithm:
				w.algorithm = v
			case fieldChallenge:
				w.challenge = v
			case fieldSalt:
				w.salt = v
			case fieldSignature:
				w.signature = v
			}
			scratch = s
		case c == '-' || c >= '0' && c <= '9':
			n, ok := r.integer()
			if !ok || field {
				return w, false
			}
			switch f {
			case fieldNumber:
				w.number = n
			case fieldTook:
				w.took = n
			}
		case f == fieldNone && (r.literal("true") || r.literal("false") || r.literal("null")):
		case c == 'n' && r.literal("null"): // null leaves a known field as it was, as encoding/json does
		default:
			return w, false
		}
		if r.skip('}') {
			return w, r.end()
		}
		if !r.skip(',') {
			return w, false
		}
	}
}

// The payload's fields; the strings come before the numbers.
const (
	fieldNone = iota
	fieldAlgorithm
	fieldChallenge
	fieldSalt
	fieldSignature
	fieldNumber
	fieldTook
)

func fieldOf(key []byte) int {
	for f, name := range [...]string{"algorithm", "challenge", "salt", "signature", "number", "took"} {
		if fold(key, name) {
			return f + 1
		}
	}
	return fieldNone
}

// reader walks a JSON text.
type reader struct {
	b []byte
	i int
}

func (r *reader) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\n' || r.b[r.i] == '\r') {
		r.i++
	}
}

// skip consumes c after any space.
func (r *reader) skip(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *reader) end() bool {
	r.space()
	return r.i == len(r.b)
}

func (r *reader) literal(s string) bool {
	if len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// str reads a string after any space and appends its unescaped bytes to dst; for a key it returns the raw bytes
// instead and refuses escapes, which no ALTCHA key needs.
func (r *reader) str(dst []byte, key bool) ([]byte, bool) {
	if !r.skip('"') {
		return nil, false
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			if key {
				return r.b[start : r.i-1], true
			}
			return dst, true
		case c < 0x20 || c >= 0x80: // control bytes are errors; anything beyond ASCII (where encoding/json
			return nil, false // replaces invalid UTF-8 and folds keys by Unicode rules) goes the slow way
		case c == '\\':
			if key || r.i+1 >= len(r.b) {
				return nil, false
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				// Only the escapes of one byte (Go's encoders write & < > as \u0026 \u003c \u003e); anything
				// wider goes the slow way.
				if r.i+4 > len(r.b) {
					return nil, false
				}
				v, ok := hex4(r.b[r.i : r.i+4])
				if !ok || v >= 0x80 {
					return nil, false
				}
				dst = append(dst, byte(v))
				r.i += 4
			default:
				return nil, false
			}
		default:
			if !key {
				dst = append(dst, c)
			}
			r.i++
		}
	}
	return nil, false
}

// integer reads a JSON integer (no fraction, no exponent) that fits an int64.
func (r *reader) integer() (int64, bool) {
	neg := r.i < len(r.b) && r.b[r.i] == '-'
	if neg {
		r.i++
	}
	start := r.i
	var n uint64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		if n > (math.MaxInt64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(r.b[r.i]-'0')
		r.i++
	}
	digits := r.i - start
	if digits == 0 || digits > 1 && r.b[start] == '0' {
		return 0, false
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

func hex4(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// fold reports whether key equals name (lower-case ASCII) ignoring ASCII case.
func fold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}
