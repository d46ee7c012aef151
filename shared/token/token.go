// Package token is the token format edge, waitroom and booking agree on.
//
// Admission tokens are JWTs signed with Ed25519 (alg EdDSA) under a key id (kid). Their public keys are published
// as a JWKS, so any JOSE library (a CDN worker, the edge, booking) can verify them without calling us. User tokens
// identify a fan (HS256 with a secret the services share, or an external issuer's keys from its JWKS).
package token

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/flashseat/flashseat/shared/store"
)

// Audience is the aud of every admission token.
const Audience = "booking"

// Errors a verifier returns; callers compare with errors.Is.
var (
	ErrInvalid   = errors.New("token: invalid")        // malformed, bad signature, unknown key, wrong audience
	ErrExpired   = errors.New("token: expired")        // past exp
	ErrWrongShow = errors.New("token: wrong show")     // admission token for another show
	ErrWrongUser = errors.New("token: wrong user")     // sub is not the caller
	ErrRevoked   = errors.New("token: revoked")        // jti revoked (booking done, operator kick)
	ErrNoKey     = errors.New("token: no signing key") // issuer misconfigured
	// ErrKeysUnavailable means a token names a key its verifier cannot look up now: the key set is fetched from
	// the issuer (a JWKS URL) and no fetch has succeeded yet, or the last one failed. The token may be perfectly
	// good, so this is an outage to wait out (it wraps store.ErrUnavailable: every error table answers 503 with
	// Retry-After), never a refusal: a replica that starts while the issuer is slow must not turn the first
	// admitted fans away.
	ErrKeysUnavailable = fmt.Errorf("token: verification keys unavailable: %w", store.ErrUnavailable)
)

// Admission is the claim set of an admission token: sub (user id), show, jti, iat, exp, aud="booking".
type Admission struct {
	Show string `json:"show"`
	jwt.RegisteredClaims
}

// Key is an Ed25519 signing key with its key id.
type Key struct {
	ID      string
	Private ed25519.PrivateKey
}

// Public returns the verification half of k.
func (k Key) Public() PublicKey {
	return PublicKey{ID: k.ID, Key: k.Private.Public().(ed25519.PublicKey)}
}

// PublicKey is a verification key with its key id.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// GenerateKey makes a fresh Ed25519 key, for development and tests.
func GenerateKey() (Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: Thumbprint(priv.Public().(ed25519.PublicKey)), Private: priv}, nil
}

// ParseSeed reads a base64 (standard or URL, padded or not) 32-byte Ed25519 seed, as configured in the
// environment. An empty id defaults to the key's RFC 7638 thumbprint.
func ParseSeed(id, seed string) (Key, error) {
	b, err := decodeB64(seed)
	if err != nil || len(b) != ed25519.SeedSize {
		return Key{}, fmt.Errorf("token: signing key must be a base64 %d-byte Ed25519 seed", ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(b)
	if id == "" {
		id = Thumbprint(priv.Public().(ed25519.PublicKey))
	}
	return Key{ID: id, Private: priv}, nil
}

// EncodeSeed is the inverse of ParseSeed's input format.
func EncodeSeed(k Key) string { return base64.RawURLEncoding.EncodeToString(k.Private.Seed()) }

// Thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 public key, used as its default kid.
func Thumbprint(pub ed25519.PublicKey) string {
	canon := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canon))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func decodeB64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("token: not base64")
}

// Issuer signs admission tokens with its current key and publishes current and previous public keys, so a
// rotation drops nobody holding a token signed with the previous key. It also makes place receipts, under a MAC
// key derived from each of its signing keys (see IssueReceipt).
type Issuer struct {
	current  Key
	previous []PublicKey
	receipts []receiptKey // the current key's first (when it has one), then previous keys given whole
}

// NewIssuer returns an issuer signing with current. previous are public keys still accepted and published during
// a rotation; place receipts MACed under them no longer verify (WithPrevious keeps them).
func NewIssuer(current Key, previous ...PublicKey) *Issuer {
	is := &Issuer{current: current, previous: previous}
	if current.Private != nil {
		is.receipts = []receiptKey{newReceiptKey(current)}
	}
	return is
}

// WithPrevious returns an issuer like is that also keeps previous signing keys during a rotation: their public
// halves are accepted and published as is's previous keys are, and the place receipts made under them still
// verify (their MAC key is derived from the private half).
func (is *Issuer) WithPrevious(previous ...Key) *Issuer {
	out := &Issuer{current: is.current, previous: append([]PublicKey(nil), is.previous...),
		receipts: append([]receiptKey(nil), is.receipts...)}
	for _, k := range previous {
		out.previous = append(out.previous, k.Public())
		out.receipts = append(out.receipts, newReceiptKey(k))
	}
	return out
}

// Issue signs an admission token for user at show, valid for ttl from now.
func (is *Issuer) Issue(userID, showID, jti string, now time.Time, ttl time.Duration) (string, time.Time, error) {
	if is == nil || is.current.Private == nil {
		return "", time.Time{}, ErrNoKey
	}
	exp := now.Add(ttl).Truncate(time.Second)
	claims := Admission{
		Show: showID,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID,
			ID:        jti,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = is.current.ID
	s, err := t.SignedString(is.current.Private)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("token: sign: %w", err)
	}
	return s, exp, nil
}

// Keys returns every public key a verifier should accept, current first.
func (is *Issuer) Keys() []PublicKey {
	return append([]PublicKey{is.current.Public()}, is.previous...)
}

// JWKS is the JSON Web Key Set document served at /.well-known/jwks.json.
func (is *Issuer) JWKS() JWKS { return NewJWKS(is.Keys()) }

// KeySource finds a verification key by kid. A static set and a JWKS fetched over HTTP both implement it.
type KeySource interface {
	Key(kid string) (ed25519.PublicKey, bool)
}

// fetchedKeys is a KeySource whose set comes from elsewhere and may be out of reach (RemoteKeys): Unavailable
// reports that its last attempt to get the set failed, so a kid it lacks may only be one it could not fetch.
type fetchedKeys interface {
	Unavailable() bool
}

// StaticKeys is a fixed KeySource.
type StaticKeys map[string]ed25519.PublicKey

// Key implements KeySource.
func (s StaticKeys) Key(kid string) (ed25519.PublicKey, bool) { k, ok := s[kid]; return k, ok }

// NewStaticKeys indexes keys by id.
func NewStaticKeys(keys ...PublicKey) StaticKeys {
	s := StaticKeys{}
	for _, k := range keys {
		s[k.ID] = k.Key
	}
	return s
}

// Verifier checks admission tokens: signature under a known kid, EdDSA only, audience, expiry, show and user.
type Verifier struct {
	keys   KeySource
	parser *jwt.Parser
	cache  *verifiedCache[*Admission] // nil: every token is checked in full
}

// NewVerifier returns a verifier trusting the keys of src. leeway tolerates clock skew between replicas.
func NewVerifier(src KeySource, leeway time.Duration) *Verifier {
	return &Verifier{keys: src, parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithAudience(Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
	)}
}

// NewCachedVerifier is NewVerifier remembering up to size tokens whose signature and claims it accepted, for at
// most ttl and never past their exp (verifiedCache). With a show's queue on, each of an admitted fan's holds and
// seat-map reads carries the same token, and its Ed25519 signature was checked by the edge and again by booking
// every time. A remembered token is still checked on every use for all that can change while it is remembered:
// the show and user it is presented for, and its expiry (the entry ends at exp, after which the full check and its
// leeway decide). Revocation is the caller's to check on every use, as for a token checked in full.
func NewCachedVerifier(src KeySource, leeway time.Duration, size int, ttl time.Duration) *Verifier {
	v := NewVerifier(src, leeway)
	v.cache = newVerifiedCache[*Admission](size, ttl)
	return v
}

// Verify checks raw for showID and userID and returns its claims. Revocation is the caller's to check (it needs
// Redis), using the returned jti.
func (v *Verifier) Verify(raw, showID, userID string) (*Admission, error) {
	var c *Admission
	var err error
	if v.cache != nil {
		c, err = v.cache.verify(raw, v.check)
	} else {
		c, _, err = v.check(raw)
	}
	switch {
	case err != nil:
		return nil, err
	case c.Show != showID:
		return nil, ErrWrongShow
	case c.Subject != userID:
		return nil, ErrWrongUser
	}
	own := *c // the cached claims stay as they were, whatever the caller does with its copy
	return &own, nil
}

// check verifies what does not depend on the request: signature, audience, expiry, and a subject and jti present.
func (v *Verifier) check(raw string) (*Admission, time.Time, error) {
	var c Admission
	if err := parseSigned(v.parser, v.keys, raw, &c); err != nil {
		return nil, time.Time{}, err
	}
	if c.ID == "" || c.Subject == "" {
		return nil, time.Time{}, fmt.Errorf("%w: missing sub or jti", ErrInvalid)
	}
	return &c, c.ExpiresAt.Time, nil // present: the parser requires exp
}

// parseSigned verifies raw's signature under the key its kid names in keys, and parser's checks, into claims.
func parseSigned(parser *jwt.Parser, keys KeySource, raw string, claims jwt.Claims) error {
	_, err := parser.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := keys.Key(kid)
		if !ok {
			if f, fetched := keys.(fetchedKeys); fetched && f.Unavailable() {
				return nil, fmt.Errorf("%w: kid %q", ErrKeysUnavailable, kid)
			}
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return k, nil
	})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, ErrKeysUnavailable):
		return ErrKeysUnavailable
	case err != nil:
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// JWK is one key of a JWKS. Only the members this project uses are typed; kty OKP/crv Ed25519 for our keys, EC
// and RSA members for external user-token issuers.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// NewJWKS renders Ed25519 public keys as a JWKS.
func NewJWKS(keys []PublicKey) JWKS {
	s := JWKS{Keys: make([]JWK, 0, len(keys))}
	for _, k := range keys {
		s.Keys = append(s.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.Key),
			Kid: k.ID, Alg: "EdDSA", Use: "sig"})
	}
	return s
}

// Ed25519Keys returns the Ed25519 keys of s by kid, ignoring keys of other types.
func (s JWKS) Ed25519Keys() StaticKeys {
	out := StaticKeys{}
	for _, k := range s.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(b) != ed25519.PublicKeySize {
			continue
		}
		out[k.Kid] = ed25519.PublicKey(b)
	}
	return out
}

// ParseJWKS decodes a JWKS document.
func ParseJWKS(b []byte) (JWKS, error) {
	var s JWKS
	if err := json.Unmarshal(b, &s); err != nil {
		return JWKS{}, fmt.Errorf("token: jwks: %w", err)
	}
	return s, nil
}
