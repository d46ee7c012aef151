// Package holdbody reads the body of a hold request, POST /api/v1/bookings/hold, the one request a flash crowd
// sends tens of thousands of times a second. Booking decides the hold on it, and the edge's gate reads its showId
// first to know which show's waiting room must have admitted the caller: the two must read the same show from the
// same bytes, so they read it with the same code, Decode. The plain shape is read by hand (encoding/json's
// reflection was a third of the CPU booking spent on a refused hold); anything else is left to encoding/json.
package holdbody

import (
	"bytes"
	"encoding/json"
)

// Request is a hold request's body.
type Request struct {
	ShowID  string   `json:"showId"`
	SeatIDs []string `json:"seatIds"`
}

// Decode reads a hold's body b as json.Unmarshal into a Request would, and fails as it would, with its error (a
// *json.SyntaxError, a *json.UnmarshalTypeError, ...) for the caller to describe; the plain shape, nearly every
// body, is read by hand on the way (FuzzDecode holds the two to the same answers). The values are a copy of b: b
// may be a buffer the caller reuses.
func Decode(b []byte) (Request, error) {
	if req, ok := parse(b); ok {
		return req, nil
	}
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, err
	}
	return req, nil
}

// parse reads {"showId":"…","seatIds":["…",…]} with JSON whitespace anywhere JSON allows it. ok is false for
// anything else (unknown, repeated or differently cased keys, escapes, non-ASCII, malformed input); it never
// misreads: what it accepts, json.Unmarshal into a Request reads the same way, which is where Decode sends what
// it declines.
func parse(b []byte) (req Request, ok bool) {
	p := holdParser{b: b}
	if !p.byte('{') {
		return Request{}, false
	}
	var seenShow, seenSeats bool
	for first := true; ; first = false {
		if p.byte('}') {
			if first || !p.end() {
				return Request{}, false // {} is left to decode; trailing data is its error to name
			}
			return req, true
		}
		if !first && !p.byte(',') {
			return Request{}, false
		}
		key, ok := p.raw() // compared in place: only the values are kept
		if !ok || !p.byte(':') {
			return Request{}, false
		}
		switch {
		case string(key) == "showId" && !seenShow:
			seenShow = true
			if req.ShowID, ok = p.str(); !ok {
				return Request{}, false
			}
		case string(key) == "seatIds" && !seenSeats:
			seenSeats = true
			if req.SeatIDs, ok = p.strs(); !ok {
				return Request{}, false
			}
		default: // unknown, repeated or differently cased keys: encoding/json's rules apply
			return Request{}, false
		}
	}
}

type holdParser struct {
	b []byte
	i int
	// text is b as a string, made at the first value read: the values are slices of it, one copy of the body
	// where a string per value was one allocation each.
	text string
}

func (p *holdParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after optional whitespace.
func (p *holdParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *holdParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// str reads a string of printable ASCII without escapes.
func (p *holdParser) str() (string, bool) {
	b, ok := p.raw()
	if !ok {
		return "", false
	}
	if p.text == "" {
		p.text = string(p.b)
	}
	end := p.i - 1 // the closing quote
	return p.text[end-len(b) : end], true
}

// raw reads such a string and returns its bytes, in the body's buffer.
func (p *holdParser) raw() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	// The closing quote first (IndexByte is vectorised), then what it closes: any escape or byte outside printable
	// ASCII declines, as a byte-by-byte scan stopping at the first quote would.
	n := bytes.IndexByte(p.b[p.i:], '"')
	if n < 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+n]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c > 0x7e {
			return nil, false
		}
	}
	p.i += n + 1
	return s, true
}

// strs reads a non-empty array of such strings.
func (p *holdParser) strs() ([]string, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := make([]string, 0, 4)
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}
