package ticket

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/token"
)

// Rotating codes (docs/TICKETS.md fixes their bytes). The platform certifies a per-ticket holder key; the
// holder's page signs the current second with it every RotateEvery; a door checks both signatures and the
// stamp's age with the gate kit (Kit) alone. Every key a door holds is public, so a door cannot make a code, and
// a screenshot is worthless once older than MaxAge.

// The time rules both sides apply.
const (
	RotateEvery = 15 * time.Second // how often the holder's page makes a new stamp
	MaxAge      = 30 * time.Second // the oldest stamp a door accepts (plus Skew)
	Skew        = 5 * time.Second  // forgiven clock difference, each way
)

// Errors of Kit.Verify beyond the static code's; each wraps ErrInvalid.
var (
	ErrExpired     = fmt.Errorf("%w: code expired", ErrInvalid)               // a stamp older than MaxAge+Skew: a screenshot
	ErrFuture      = fmt.Errorf("%w: code stamped in the future", ErrInvalid) // a stamp ahead of the checker by more than Skew
	ErrWrongShow   = fmt.Errorf("%w: code of another show", ErrInvalid)
	ErrCertExpired = fmt.Errorf("%w: certificate past its notAfter", ErrInvalid)
	ErrNotInKit    = fmt.Errorf("%w: ticket not in the gate kit", ErrInvalid) // refunded, transferred, resold, unknown
	ErrStatic      = fmt.Errorf("%w: a static code where a rotating one is required", ErrInvalid)
)

// certVersion is the rotating certificate's format byte.
const certVersion = 2

// Signature contexts and the holder key's derivation label (docs/TICKETS.md).
const (
	certContext  = "flashseat-ticket-cert-v2\x00"
	stampContext = "flashseat-ticket-stamp-v2\x00"
	holderLabel  = "flashseat-holder-key\x00"
)

// Certificate is what a rotating code's certificate says.
type Certificate struct {
	KeyID     string
	TicketID  string
	ShowID    string
	SeatID    string
	HolderKey ed25519.PublicKey
	NotAfter  time.Time // whole seconds
}

// Holder is what a ticket's holder needs to make its codes: the certificate, its platform signature and the
// holder key (an Ed25519 private key; its seed is what the holder's page is given).
type Holder struct {
	Cert    []byte
	CertSig []byte
	Key     ed25519.PrivateKey
}

// holderKey derives a ticket's holder key from the platform's seed: nothing is stored, and a reissued ticket
// (a new id) has a new key.
func (s *Signer) holderKey(ticketID string) ed25519.PrivateKey {
	m := hmac.New(sha256.New, s.key.Private.Seed())
	m.Write([]byte(holderLabel))
	m.Write([]byte(ticketID))
	return ed25519.NewKeyFromSeed(m.Sum(nil))
}

// Certify returns the holder material of one ticket, valid until notAfter.
func (s *Signer) Certify(ticketID, showID, seatID string, notAfter time.Time) (Holder, error) {
	p, err := s.head(certVersion, ticketID, showID, seatID)
	if err != nil {
		return Holder{}, err
	}
	key := s.holderKey(ticketID)
	p.Write(key.Public().(ed25519.PublicKey))
	p.Write(binary.BigEndian.AppendUint64(nil, uint64(notAfter.Unix())))
	cert := p.Bytes()
	return Holder{Cert: cert, CertSig: ed25519.Sign(s.key.Private, append([]byte(certContext), cert...)), Key: key}, nil
}

// Seed is the holder key as the holder's page is given it (32 bytes).
func (h Holder) Seed() []byte { return h.Key.Seed() }

// Stamp returns the code of h made at at (to the second), as the holder's page makes it.
func (h Holder) Stamp(at time.Time) string {
	return MakeCode(h.Cert, h.CertSig, h.Key, at)
}

// MakeCode assembles a rotating code from a certificate, its signature and a holder key; the loadtest and the
// tests use it as a phone would.
func MakeCode(cert, certSig []byte, holder ed25519.PrivateKey, at time.Time) string {
	stamp := binary.BigEndian.AppendUint64(nil, uint64(at.Unix()))
	sig := ed25519.Sign(holder, stampMessage(cert, stamp))
	return b64.EncodeToString(cert) + "." + b64.EncodeToString(certSig) + "." + b64.EncodeToString(stamp) + "." +
		b64.EncodeToString(sig)
}

// stampMessage is what the holder key signs: the stamp bound to its certificate.
func stampMessage(cert, stamp []byte) []byte {
	msg := make([]byte, 0, len(stampContext)+len(cert)+len(stamp))
	return append(append(append(msg, stampContext...), cert...), stamp...)
}

// Rotating is what a verified rotating code says.
type Rotating struct {
	Certificate
	Stamped time.Time
}

// Claims is the code's ticket, as a static code's Claims.
func (r Rotating) Claims() Claims {
	return Claims{TicketID: r.TicketID, ShowID: r.ShowID, SeatID: r.SeatID, KeyID: r.KeyID}
}

// Kit is what a door needs to check rotating codes alone: the platform's public keys, the show, and (when
// non-nil) the tickets that still admit. The server checks with a Kit whose Tickets is nil and asks its ledger.
type Kit struct {
	ShowID  string
	Keys    token.KeySource
	Tickets map[string]bool
	MaxAge  time.Duration // 0: MaxAge
	Skew    time.Duration // 0: Skew
}

// IsRotating tells a rotating code's shape (three dots) from a static one's, without checking anything.
func IsRotating(code string) bool { return strings.Count(code, ".") == 3 }

// Peek parses a rotating code's certificate without checking any signature: the server uses it to find which
// show's rules apply before it verifies the code with that show's Kit.
func Peek(code string) (Certificate, error) {
	parts, err := split(code)
	if err != nil {
		return Certificate{}, err
	}
	return parseCert(parts[0])
}

// Verify checks code at now, in docs/TICKETS.md's order: its shape, the certificate's signature, its show and
// notAfter, the stamp's signature, the stamp's age, and the kit's tickets.
func (k *Kit) Verify(code string, now time.Time) (Rotating, error) {
	if len(code) > MaxCodeLen { // before telling a static code's shape: an oversized one is malformed either way
		return Rotating{}, ErrMalformed
	}
	if strings.Count(code, ".") == 1 {
		return Rotating{}, ErrStatic
	}
	parts, err := split(code)
	if err != nil {
		return Rotating{}, err
	}
	c, err := parseCert(parts[0])
	if err != nil {
		return Rotating{}, err
	}
	pub, ok := k.Keys.Key(c.KeyID)
	if !ok {
		return Rotating{}, ErrUnknownKey
	}
	if !ed25519.Verify(pub, append([]byte(certContext), parts[0]...), parts[1]) {
		return Rotating{}, ErrBadSignature
	}
	if c.ShowID != k.ShowID {
		return Rotating{}, ErrWrongShow
	}
	if now.After(c.NotAfter) {
		return Rotating{}, ErrCertExpired
	}
	if !ed25519.Verify(c.HolderKey, stampMessage(parts[0], parts[2]), parts[3]) {
		return Rotating{}, ErrBadSignature
	}
	maxAge, skew := k.MaxAge, k.Skew
	if maxAge <= 0 {
		maxAge = MaxAge
	}
	if skew <= 0 {
		skew = Skew
	}
	stamped := int64(binary.BigEndian.Uint64(parts[2]))
	switch n := now.Unix(); {
	case stamped > n+int64(skew/time.Second):
		return Rotating{}, ErrFuture
	case n-stamped > int64((maxAge+skew)/time.Second):
		return Rotating{}, ErrExpired
	}
	if k.Tickets != nil && !k.Tickets[c.TicketID] {
		return Rotating{}, ErrNotInKit
	}
	return Rotating{Certificate: c, Stamped: time.Unix(stamped, 0).UTC()}, nil
}

// split decodes a rotating code's four parts: certificate, its signature, stamp, stamp signature.
func split(code string) ([4][]byte, error) {
	var out [4][]byte
	if len(code) > MaxCodeLen {
		return out, ErrMalformed
	}
	ss := strings.Split(code, ".")
	if len(ss) != 4 {
		return out, ErrMalformed
	}
	for i, s := range ss {
		b, err := b64.DecodeString(s)
		if err != nil {
			return out, ErrMalformed
		}
		out[i] = b
	}
	if len(out[1]) != ed25519.SignatureSize || len(out[2]) != 8 || len(out[3]) != ed25519.SignatureSize {
		return out, ErrMalformed
	}
	return out, nil
}

func parseCert(p []byte) (Certificate, error) {
	if len(p) == 0 || p[0] != certVersion {
		return Certificate{}, ErrMalformed
	}
	f, p, ok := readIDs(p[1:])
	if !ok || len(p) != ed25519.PublicKeySize+8 {
		return Certificate{}, ErrMalformed
	}
	notAfter := int64(binary.BigEndian.Uint64(p[ed25519.PublicKeySize:]))
	if notAfter < 0 {
		return Certificate{}, ErrMalformed
	}
	return Certificate{KeyID: f[0], TicketID: f[1], ShowID: f[2], SeatID: f[3],
		HolderKey: ed25519.PublicKey(bytes.Clone(p[:ed25519.PublicKeySize])), NotAfter: time.Unix(notAfter, 0).UTC()}, nil
}
