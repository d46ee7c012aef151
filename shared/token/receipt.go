package token

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ReceiptAudience is the aud of a place receipt. It differs from Audience, so a receipt is never accepted as an
// admission token, nor an admission token as a receipt.
const ReceiptAudience = "waitroom-place"

// ReceiptTTL bounds how long a place receipt proves a place: a queue lasts hours, not days.
const ReceiptTTL = 48 * time.Hour

// Receipt is the claim set of a place receipt: the waiting room's signed statement that user (sub) holds ticket
// seq in show's queue (seq 0: in the pool drawn at the sale's opening), issued at iat. A fan presents it again
// after the waiting room lost its state, and gets the same ticket back.
type Receipt struct {
	Show string `json:"show"`
	Seq  int64  `json:"seq"`
	jwt.RegisteredClaims
}

// IssueReceipt signs a place receipt with the admission signing key.
func (is *Issuer) IssueReceipt(userID, showID string, seq int64, now time.Time) (string, error) {
	if is == nil || is.current.Private == nil {
		return "", ErrNoKey
	}
	claims := Receipt{
		Show: showID,
		Seq:  seq,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID,
			Audience:  jwt.ClaimStrings{ReceiptAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ReceiptTTL)),
		},
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = is.current.ID
	s, err := t.SignedString(is.current.Private)
	if err != nil {
		return "", fmt.Errorf("token: sign receipt: %w", err)
	}
	return s, nil
}

// ReceiptVerifier checks place receipts: signature under a known kid, EdDSA only, audience, expiry, show, user.
type ReceiptVerifier struct {
	keys   KeySource
	parser *jwt.Parser
}

// NewReceiptVerifier returns a verifier of receipts signed by the keys of src.
func NewReceiptVerifier(src KeySource, leeway time.Duration) *ReceiptVerifier {
	return &ReceiptVerifier{keys: src, parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithAudience(ReceiptAudience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
	)}
}

// Verify checks raw for showID and userID and returns its claims.
func (v *ReceiptVerifier) Verify(raw, showID, userID string) (*Receipt, error) {
	var c Receipt
	if err := parseSigned(v.parser, v.keys, raw, &c); err != nil {
		return nil, err
	}
	switch {
	case c.Subject == "" || c.Seq < 0:
		return nil, fmt.Errorf("%w: missing sub or bad seq", ErrInvalid)
	case c.Show != showID:
		return nil, ErrWrongShow
	case c.Subject != userID:
		return nil, ErrWrongUser
	}
	return &c, nil
}
