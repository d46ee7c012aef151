package token

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// UserIssuerName and UserAudience are the iss and aud of user tokens this platform issues itself.
const (
	UserIssuerName = "flashseat"
	UserAudience   = "flashseat-api"
)

// MinSecretLen is the shortest HS256 secret a service accepts.
const MinSecretLen = 32

// User is a user token's claims: sub is the user id.
type User struct {
	jwt.RegisteredClaims
}

// UserIssuer signs user tokens (guest identities) with an HS256 secret shared by edge and booking.
type UserIssuer struct {
	secret []byte
}

// NewUserIssuer returns an issuer; the secret must be at least MinSecretLen bytes.
func NewUserIssuer(secret []byte) (*UserIssuer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("token: user token secret must be at least %d bytes", MinSecretLen)
	}
	return &UserIssuer{secret: secret}, nil
}

// Issue signs a token for userID valid for ttl.
func (is *UserIssuer) Issue(userID string, now time.Time, ttl time.Duration) (string, error) {
	c := User{jwt.RegisteredClaims{
		Issuer:    UserIssuerName,
		Subject:   userID,
		Audience:  jwt.ClaimStrings{UserAudience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(is.secret)
}

// IsOwn reports whether raw, a user token that verified, is one this platform issued itself (a guest identity)
// rather than the external identity provider's (an account): ours alone are HS256, and the external issuer's
// parser refuses HS256, so the header's alg tells them apart without verifying again.
func IsOwn(raw string) bool {
	header, _, ok := strings.Cut(raw, ".")
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return false
	}
	var h struct {
		Alg string `json:"alg"`
	}
	return json.Unmarshal(b, &h) == nil && h.Alg == "HS256"
}

// UserVerifier accepts user tokens from our own HS256 issuer and, when configured, from one external issuer whose
// keys come from its JWKS (EdDSA, ES256 or RS256), with its own issuer and audience.
type UserVerifier struct {
	secret   []byte
	own      *jwt.Parser
	external *RemoteKeys
	extParse *jwt.Parser
}

// External describes a trusted external identity provider.
type External struct {
	JWKSURL  string
	Issuer   string
	Audience string
}

// NewUserVerifier returns a verifier for our own tokens (secret may be nil to disable them) and optionally an
// external issuer (ext may be nil).
func NewUserVerifier(secret []byte, ext *External, leeway time.Duration) *UserVerifier {
	v := &UserVerifier{secret: secret}
	if len(secret) > 0 {
		v.own = jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(UserIssuerName),
			jwt.WithAudience(UserAudience), jwt.WithExpirationRequired(), jwt.WithLeeway(leeway))
	}
	if ext != nil && ext.JWKSURL != "" {
		v.external = NewRemoteKeys(ext.JWKSURL, nil)
		opts := []jwt.ParserOption{jwt.WithValidMethods([]string{"EdDSA", "ES256", "RS256"}),
			jwt.WithExpirationRequired(), jwt.WithLeeway(leeway)}
		if ext.Issuer != "" {
			opts = append(opts, jwt.WithIssuer(ext.Issuer))
		}
		if ext.Audience != "" {
			opts = append(opts, jwt.WithAudience(ext.Audience))
		}
		v.extParse = jwt.NewParser(opts...)
	}
	return v
}

// Verify returns the user id of a valid token, or an error wrapping ErrInvalid or ErrExpired.
func (v *UserVerifier) Verify(raw string) (string, error) {
	id, _, err := v.verify(raw)
	return id, err
}

// verify is Verify, also returning the token's expiry (UserCache keeps it no longer).
func (v *UserVerifier) verify(raw string) (string, time.Time, error) {
	var lastErr error = ErrInvalid
	if v.own != nil {
		var c User
		_, err := v.own.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return v.secret, nil })
		if err == nil && c.Subject != "" {
			return c.Subject, c.ExpiresAt.Time, nil
		}
		lastErr = err
	}
	if v.extParse != nil {
		var c User
		_, err := v.extParse.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			k, ok := v.external.PublicKey(kid)
			if !ok {
				return nil, fmt.Errorf("unknown kid %q", kid)
			}
			return crypto.PublicKey(k), nil
		})
		if err == nil && c.Subject != "" {
			return c.Subject, c.ExpiresAt.Time, nil
		}
		lastErr = err
	}
	if errors.Is(lastErr, jwt.ErrTokenExpired) {
		return "", time.Time{}, ErrExpired
	}
	return "", time.Time{}, fmt.Errorf("%w: %v", ErrInvalid, lastErr)
}
