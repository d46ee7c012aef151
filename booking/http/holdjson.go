package http

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// decodeHold reads a hold request body. A flash crowd sends this one body shape tens of thousands of times a
// second and encoding/json's reflection was a third of the CPU booking spent on a refused hold, so the plain
// shape (the two fields, each once, ASCII strings without escapes) is read by hand; anything else, malformed
// input included, goes through decode, which decides exactly as before. The fuzz test holds the two to the
// same answers.
func decodeHold(c *fiber.Ctx) (holdRequest, error) {
	body := c.Request().Body()
	if header(c, headerContentEncoding) != "" {
		body = c.Body() // decoded by fiber, whose Body visits every header to learn whether to: only when it must
	}
	if req, ok := parseHoldFast(body); ok {
		return req, nil
	}
	var req holdRequest
	err := decode(c, &req)
	return req, err
}

// parseHoldFast parses {"showId":"…","seatIds":["…",…]} with JSON whitespace anywhere JSON allows it. ok is
// false for anything else; it never misreads: what it accepts, json.Unmarshal reads the same way.
func parseHoldFast(b []byte) (req holdRequest, ok bool) {
	p := holdParser{b: b}
	if !p.byte('{') {
		return holdRequest{}, false
	}
	var seenShow, seenSeats bool
	for first := true; ; first = false {
		if p.byte('}') {
			if first || !p.end() {
				return holdRequest{}, false // {} is left to decode; trailing data is its error to name
			}
			return req, true
		}
		if !first && !p.byte(',') {
			return holdRequest{}, false
		}
		key, ok := p.raw() // compared in place: only the values are kept
		if !ok || !p.byte(':') {
			return holdRequest{}, false
		}
		switch {
		case string(key) == "showId" && !seenShow:
			seenShow = true
			if req.ShowID, ok = p.str(); !ok {
				return holdRequest{}, false
			}
		case string(key) == "seatIds" && !seenSeats:
			seenSeats = true
			if req.SeatIDs, ok = p.strs(); !ok {
				return holdRequest{}, false
			}
		default: // unknown, repeated or differently cased keys: encoding/json's rules apply
			return holdRequest{}, false
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
