// Package ticket makes and checks ticket codes that a scanner at the venue door can verify offline: a compact
// payload (ticket, show, seat, key id) signed with Ed25519, encoded as base64url(payload) "." base64url(signature)
// and rendered as a QR code (booking/ticket/qr). A scanner needs only the public keys; whether a ticket is still valid (not refunded,
// not already used) is the check-in service's question, answered from the database. A show may ask for rotating
// codes instead (rotating.go, docs/TICKETS.md): a platform-certified holder key stamps the current second, and a
// door checks them with the gate kit's public keys alone (Kit).
package ticket

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/flashseat/flashseat/shared/token"
)

// Errors of Verify; every one wraps ErrInvalid, so a caller that does not care why can test for that alone.
var (
	ErrInvalid      = errors.New("ticket: invalid code")
	ErrMalformed    = fmt.Errorf("%w: malformed", ErrInvalid)
	ErrUnknownKey   = fmt.Errorf("%w: unknown key id", ErrInvalid)
	ErrBadSignature = fmt.Errorf("%w: bad signature", ErrInvalid)
)

// version is the payload format; a new format gets a new number and Verify keeps reading the old ones.
const version = 1

// sigContext separates ticket signatures from anything else the same key might ever sign.
const sigContext = "flashseat-ticket-v1\x00"

// MaxCodeLen bounds what Verify will even decode; a real code is about 150 characters.
const MaxCodeLen = 512

// maxField bounds one id; the bound keeps codes small enough for a low-density QR code.
const maxField = 64

// Claims is what a code says.
type Claims struct {
	TicketID string
	ShowID   string
	SeatID   string
	KeyID    string
}

// Signer signs codes with one key.
type Signer struct {
	key token.Key
}

// NewSigner returns a signer for key; the key id is embedded in every code.
func NewSigner(key token.Key) (*Signer, error) {
	if len(key.Private) != ed25519.PrivateKeySize || key.ID == "" || len(key.ID) > maxField {
		return nil, errors.New("ticket: signing key needs an Ed25519 private key and an id of at most 64 bytes")
	}
	return &Signer{key: key}, nil
}

// Public returns the key a scanner needs.
func (s *Signer) Public() token.PublicKey { return s.key.Public() }

// Sign returns the code of one ticket.
func (s *Signer) Sign(ticketID, showID, seatID string) (string, error) {
	p, err := s.head(version, ticketID, showID, seatID)
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(s.key.Private, append([]byte(sigContext), p.Bytes()...))
	return b64.EncodeToString(p.Bytes()) + "." + b64.EncodeToString(sig), nil
}

// b64 refuses non-canonical encodings, so one ticket has exactly one valid code string.
var b64 = base64.RawURLEncoding.Strict()

// Verifier checks codes against a set of public keys (the current one and those rotated out but still on tickets).
type Verifier struct {
	keys token.KeySource
}

// NewVerifier returns a verifier trusting keys.
func NewVerifier(keys token.KeySource) *Verifier { return &Verifier{keys: keys} }

// Keys is the key source the verifier trusts, for a Kit to trust the same.
func (v *Verifier) Keys() token.KeySource { return v.keys }

// Verify checks code's signature and returns its claims.
func (v *Verifier) Verify(code string) (Claims, error) {
	if len(code) > MaxCodeLen {
		return Claims{}, ErrMalformed
	}
	ps, ss, ok := strings.Cut(code, ".")
	if !ok || strings.Contains(ss, ".") {
		return Claims{}, ErrMalformed
	}
	payload, err1 := b64.DecodeString(ps)
	sig, err2 := b64.DecodeString(ss)
	if err1 != nil || err2 != nil || len(sig) != ed25519.SignatureSize {
		return Claims{}, ErrMalformed
	}
	c, err := parse(payload)
	if err != nil {
		return Claims{}, err
	}
	pub, ok := v.keys.Key(c.KeyID)
	if !ok {
		return Claims{}, ErrUnknownKey
	}
	if !ed25519.Verify(pub, append([]byte(sigContext), payload...), sig) {
		return Claims{}, ErrBadSignature
	}
	return c, nil
}

func parse(p []byte) (Claims, error) {
	if len(p) == 0 || p[0] != version {
		return Claims{}, ErrMalformed
	}
	f, p, ok := readIDs(p[1:])
	if !ok || len(p) != 0 {
		return Claims{}, ErrMalformed
	}
	return Claims{KeyID: f[0], TicketID: f[1], ShowID: f[2], SeatID: f[3]}, nil
}

// head writes the version byte and the four ids every code opens with (key, ticket, show, seat), readIDs' inverse.
func (s *Signer) head(v byte, ticketID, showID, seatID string) (*bytes.Buffer, error) {
	p := new(bytes.Buffer)
	p.WriteByte(v)
	for _, f := range []string{s.key.ID, ticketID, showID, seatID} {
		if f == "" || len(f) > maxField {
			return nil, fmt.Errorf("ticket: ids must be 1 to %d bytes", maxField)
		}
		appendField(p, f)
	}
	return p, nil
}

// readIDs reads the four ids every code opens with: key, ticket, show, seat.
func readIDs(p []byte) (f [4]string, rest []byte, ok bool) {
	for i := range f {
		if f[i], p, ok = readField(p); !ok {
			return f, nil, false
		}
	}
	return f, p, true
}

// A field is one length byte and the id's bytes, except that our own ids (a short lowercase prefix, "_", 32
// lowercase hex digits: "tk_0f3a...") are packed as 0x80|len(prefix), the prefix and the 16 bytes the hex spells,
// which takes a code from about 200 characters to about 150 and its QR code down a size. Each id has exactly one
// encoding: the reader refuses an id sent unpacked that should have been packed.
const packed = 0x80

// packable splits an id of our own form into its prefix and raw bytes.
func packable(id string) (prefix string, raw []byte, ok bool) {
	prefix, hexPart, found := strings.Cut(id, "_")
	if !found || len(prefix) < 1 || len(prefix) > 8 || len(hexPart) != 32 || strings.ToLower(hexPart) != hexPart {
		return "", nil, false
	}
	for _, c := range prefix {
		if c < 'a' || c > 'z' {
			return "", nil, false
		}
	}
	raw, err := hex.DecodeString(hexPart)
	return prefix, raw, err == nil
}

func appendField(p *bytes.Buffer, id string) {
	if prefix, raw, ok := packable(id); ok {
		p.WriteByte(packed | byte(len(prefix)))
		p.WriteString(prefix)
		p.Write(raw)
		return
	}
	p.WriteByte(byte(len(id)))
	p.WriteString(id)
}

func readField(p []byte) (id string, rest []byte, ok bool) {
	if len(p) == 0 {
		return "", nil, false
	}
	h := p[0]
	p = p[1:]
	if h&packed == 0 {
		n := int(h)
		if n == 0 || n > maxField || len(p) < n {
			return "", nil, false
		}
		id = string(p[:n])
		if _, _, should := packable(id); should {
			return "", nil, false
		}
		return id, p[n:], true
	}
	n := int(h &^ packed)
	if n < 1 || n > 8 || len(p) < n+16 {
		return "", nil, false
	}
	id = string(p[:n]) + "_" + hex.EncodeToString(p[n:n+16])
	if _, _, valid := packable(id); !valid {
		return "", nil, false
	}
	return id, p[n+16:], true
}

// LoadKey reads TICKET_SIGNING_KEY's format (a base64 32-byte Ed25519 seed, see token.ParseSeed). An empty seed
// generates a key, for development; generated reports it so the caller can warn that codes will not survive a
// restart. The key id is a short prefix of the key's thumbprint, to keep codes (and QR codes) small.
func LoadKey(seed string) (key token.Key, generated bool, err error) {
	if seed == "" {
		key, err = token.GenerateKey()
		generated = true
	} else {
		key, err = token.ParseSeed("", seed)
	}
	if err != nil {
		return token.Key{}, false, err
	}
	key.ID = token.Thumbprint(key.Private.Public().(ed25519.PublicKey))[:8]
	return key, generated, nil
}
