package token

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Place receipts are the waiting room's statement to itself: a fan presents one again on a re-join after the
// waiting room lost its queue, and only the waiting room's replicas read it. So, unlike an admission token, it
// needs no public key: it is a JWT MACed with HS256 under a key derived (HKDF-SHA256) from the admission signing
// key, which every replica already shares and whose rotation rotates it. An HMAC costs about a microsecond where
// an Ed25519 signature costs tens, and every join that takes a new place makes one. The receipt is still a JWT
// with aud "waitroom-place" and the signing key's kid, so nothing that verifies admission tokens (EdDSA only,
// aud "booking", keys from the JWKS) accepts it.

// ReceiptAudience is the aud of a place receipt. It differs from Audience, so a receipt is never accepted as an
// admission token, nor an admission token as a receipt.
const ReceiptAudience = "waitroom-place"

// ReceiptTTL bounds how long a place receipt proves a place: a queue lasts hours, not days.
const ReceiptTTL = 48 * time.Hour

// receiptInfo separates the receipt MAC key from every other use of the admission signing key's seed. A new
// receipt format takes a new info, so no receipt of one format is ever read as another.
const receiptInfo = "flashseat waitroom place receipt v1"

// Receipt is the claim set of a place receipt: the waiting room's MACed statement that user (sub) holds ticket
// seq in show's queue (seq 0: in the pool drawn at the sale's opening), issued at iat. A fan presents it again
// after the waiting room lost its state, and gets the same ticket back.
type Receipt struct {
	Show string `json:"show"`
	Seq  int64  `json:"seq"`
	jwt.RegisteredClaims
	// Renew is set on a receipt that verified but was not made under the current key in the current format (a
	// previous key's during a rotation, or an Ed25519 receipt from before the MAC format): the fan's next answer
	// should carry a fresh one, so receipts move off a key before it is dropped.
	Renew bool `json:"-"`
}

// Derive returns a 32-byte secret for another use of the admission signing key, separated from every other use
// by info: every replica shares the key, so every replica derives the same secret, and rotating the key rotates
// it. The waiting room's proof-of-work challenges are MACed under one (shared/pow).
func (is *Issuer) Derive(info string) ([]byte, error) {
	if is == nil || is.current.Private == nil {
		return nil, ErrNoKey
	}
	return hkdf.Key(sha256.New, is.current.Private.Seed(), nil, info, sha256.Size)
}

// receiptKey is one admission key's receipt MAC key.
type receiptKey struct {
	header string     // the JOSE header, base64url: every receipt under this key starts with it
	macs   *sync.Pool // of hash.Hash, HMAC-SHA256 keyed with the derived key: keying one costs two hash blocks
}

// newReceiptKey derives k's receipt key. hkdf.Key fails only for an output longer than 255 hashes, and a struct
// of strings always marshals, so neither error can happen.
func newReceiptKey(k Key) receiptKey {
	secret, _ := hkdf.Key(sha256.New, k.Private.Seed(), nil, receiptInfo, sha256.Size)
	h, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{"HS256", k.ID, "JWT"})
	return receiptKey{header: base64.RawURLEncoding.EncodeToString(h),
		macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, secret) }}}
}

// appendMAC appends the HMAC-SHA256 of signed to dst.
func (k receiptKey) appendMAC(dst, signed []byte) []byte {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(signed)
	dst = m.Sum(dst)
	k.macs.Put(m)
	return dst
}

// IssueReceipt makes a place receipt under the current admission key. It encodes the claims by hand, as
// encoding/json would but without reflection: the claims are a fixed shape and this runs on every new place.
func (is *Issuer) IssueReceipt(userID, showID string, seq int64, now time.Time) (string, error) {
	if is == nil || is.current.Private == nil {
		return "", ErrNoKey
	}
	k := is.receipts[0]
	var claims [256]byte
	c := append(claims[:0], `{"show":`...)
	c = appendJSONString(c, showID)
	c = append(c, `,"seq":`...)
	c = strconv.AppendInt(c, seq, 10)
	c = append(c, `,"sub":`...)
	c = appendJSONString(c, userID)
	c = append(c, `,"aud":"`+ReceiptAudience+`","exp":`...)
	c = strconv.AppendInt(c, now.Add(ReceiptTTL).Unix(), 10)
	c = append(c, `,"iat":`...)
	c = strconv.AppendInt(c, now.Unix(), 10)
	c = append(c, '}')

	enc := base64.RawURLEncoding
	out := make([]byte, 0, len(k.header)+2+enc.EncodedLen(len(c))+enc.EncodedLen(sha256.Size))
	out = append(append(out, k.header...), '.')
	out = enc.AppendEncode(out, c)
	var mac [sha256.Size]byte
	out = enc.AppendEncode(append(out, '.'), k.appendMAC(mac[:0], out))
	return string(out), nil
}

// appendJSONString appends s as a JSON string. Ids are plain ASCII in practice; anything else (a user id may
// hold quotes or non-ASCII) goes through encoding/json, so the result is always what it would write.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	return append(append(append(dst, '"'), s...), '"')
}

// receiptClaims is a MAC receipt's payload as decoded: encoding/json reads it only after the MAC matched.
type receiptClaims struct {
	Show string           `json:"show"`
	Seq  *int64           `json:"seq"`
	Sub  string           `json:"sub"`
	Aud  jwt.ClaimStrings `json:"aud"`
	Exp  *int64           `json:"exp"`
	Iat  *int64           `json:"iat"`
}

// ReceiptVerifier checks place receipts: the MAC under the current or a previous admission key, audience,
// expiry, issued-at, show, user. It also accepts Ed25519 receipts (alg EdDSA under a published kid), the format
// before the MAC one, so no fan holding one loses a place across the upgrade; they expire within ReceiptTTL.
type ReceiptVerifier struct {
	keys   map[string]receiptKey // by header
	first  string                // header of the current key
	leeway time.Duration
	legacy *jwt.Parser
	public KeySource
	now    func() time.Time
}

// NewReceiptVerifier returns a verifier of the receipts is makes, and of those made under is's previous keys:
// MAC receipts under previous keys given whole (Issuer.WithPrevious), Ed25519 ones under any published key.
// leeway tolerates clock skew between replicas.
func NewReceiptVerifier(is *Issuer, leeway time.Duration) *ReceiptVerifier {
	v := &ReceiptVerifier{keys: map[string]receiptKey{}, leeway: leeway, public: NewStaticKeys(is.Keys()...),
		now: time.Now, legacy: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
			jwt.WithAudience(ReceiptAudience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(leeway),
		)}
	for i, k := range is.receipts {
		if i == 0 {
			v.first = k.header
		}
		if _, dup := v.keys[k.header]; !dup { // a previous key reusing a kid must not shadow the current one
			v.keys[k.header] = k
		}
	}
	return v
}

// Verify checks raw for showID and userID and returns its claims.
func (v *ReceiptVerifier) Verify(raw, showID, userID string) (*Receipt, error) {
	header, _, _ := strings.Cut(raw, ".")
	k, ok := v.keys[header]
	if !ok {
		return v.verifyLegacy(raw, showID, userID)
	}
	signed, mac, ok := cutLast(raw)
	if !ok || strings.Count(signed, ".") != 1 {
		return nil, fmt.Errorf("%w: malformed receipt", ErrInvalid)
	}
	var got [sha256.Size]byte
	if n, err := base64.RawURLEncoding.Decode(got[:], []byte(mac)); err != nil || n != sha256.Size ||
		base64.RawURLEncoding.EncodedLen(n) != len(mac) {
		return nil, fmt.Errorf("%w: malformed receipt MAC", ErrInvalid)
	}
	var want [sha256.Size]byte
	if !hmac.Equal(k.appendMAC(want[:0], []byte(signed)), got[:]) {
		return nil, fmt.Errorf("%w: receipt MAC", ErrInvalid)
	}
	payload, err := base64.RawURLEncoding.DecodeString(signed[len(header)+1:])
	if err != nil {
		return nil, fmt.Errorf("%w: receipt claims: %v", ErrInvalid, err)
	}
	var c receiptClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: receipt claims: %v", ErrInvalid, err)
	}
	if c.Seq == nil || c.Exp == nil || c.Iat == nil || len(c.Aud) != 1 || c.Aud[0] != ReceiptAudience {
		return nil, fmt.Errorf("%w: receipt claims", ErrInvalid)
	}
	now := v.now()
	exp, iat := time.Unix(*c.Exp, 0), time.Unix(*c.Iat, 0)
	switch {
	case !now.Before(exp.Add(v.leeway)):
		return nil, ErrExpired
	case now.Add(v.leeway).Before(iat):
		return nil, fmt.Errorf("%w: receipt issued in the future", ErrInvalid)
	}
	r := &Receipt{Show: c.Show, Seq: *c.Seq, Renew: header != v.first, RegisteredClaims: jwt.RegisteredClaims{
		Subject: c.Sub, Audience: c.Aud, ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(iat)}}
	if err := checkReceipt(r, showID, userID); err != nil {
		return nil, err
	}
	return r, nil
}

// verifyLegacy checks an Ed25519 receipt.
func (v *ReceiptVerifier) verifyLegacy(raw, showID, userID string) (*Receipt, error) {
	c := &Receipt{Renew: true}
	if err := parseSigned(v.legacy, v.public, raw, c); err != nil {
		return nil, err
	}
	if err := checkReceipt(c, showID, userID); err != nil {
		return nil, err
	}
	return c, nil
}

// checkReceipt checks a receipt's claims against the fan presenting it.
func checkReceipt(c *Receipt, showID, userID string) error {
	switch {
	case c.Subject == "" || c.Seq < 0:
		return fmt.Errorf("%w: missing sub or bad seq", ErrInvalid)
	case c.Show != showID:
		return ErrWrongShow
	case c.Subject != userID:
		return ErrWrongUser
	}
	return nil
}

// cutLast splits raw at its last dot.
func cutLast(raw string) (before, after string, ok bool) {
	i := strings.LastIndexByte(raw, '.')
	if i < 0 {
		return raw, "", false
	}
	return raw[:i], raw[i+1:], true
}
