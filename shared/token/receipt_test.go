package token

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ed25519Receipt makes a receipt in the format before the MAC one, exactly as IssueReceipt used to: fans may
// still hold such receipts across the upgrade.
func ed25519Receipt(t testing.TB, k Key, userID, showID string, seq int64, now time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, Receipt{Show: showID, Seq: seq,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID,
			Audience:  jwt.ClaimStrings{ReceiptAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ReceiptTTL)),
		}})
	tok.Header["kid"] = k.ID
	s, err := tok.SignedString(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reclaim replaces a JWT's claims segment and keeps its header and MAC.
func reclaim(raw, claims string) string {
	p := strings.Split(raw, ".")
	return p[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "." + p[2]
}

func TestReceipt(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	v := NewReceiptVerifier(is, 0)
	now := time.Now()
	raw, err := is.IssueReceipt("u1", "s1", 42, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := v.Verify(raw, "s1", "u1")
	if err != nil || r.Seq != 42 || r.Subject != "u1" || r.Show != "s1" || r.Renew {
		t.Fatalf("verify: got %+v, %v", r, err)
	}
	if got, want := r.ExpiresAt.Unix(), now.Add(ReceiptTTL).Unix(); got != want {
		t.Errorf("exp %d, want %d", got, want)
	}
	if pool, err := is.IssueReceipt("u1", "s1", 0, now); err != nil {
		t.Fatal(err)
	} else if r, err := v.Verify(pool, "s1", "u1"); err != nil || r.Seq != 0 {
		t.Fatalf("ticket 0 (the pre-opening pool): got %+v, %v", r, err)
	}

	old, _ := is.IssueReceipt("u1", "s1", 1, now.Add(-ReceiptTTL-time.Minute))
	future, _ := is.IssueReceipt("u1", "s1", 1, now.Add(time.Hour))
	adm, _, _ := is.Issue("u1", "s1", "j1", now, time.Minute)
	stranger, _ := GenerateKey()
	stranger.ID = k.ID // the same kid does not help a stranger
	forged, _ := NewIssuer(stranger).IssueReceipt("u1", "s1", 1, now)
	header := strings.Split(raw, ".")[0]
	for _, c := range []struct {
		name, raw, show, user string
		want                  error
	}{
		{"wrong show", raw, "s2", "u1", ErrWrongShow},
		{"wrong user", raw, "s1", "u2", ErrWrongUser},
		{"expired", old, "s1", "u1", ErrExpired},
		{"issued in the future", future, "s1", "u1", ErrInvalid},
		{"an admission token is no receipt", adm, "s1", "u1", ErrInvalid},
		{"forged under the same kid", forged, "s1", "u1", ErrInvalid},
		{"tampered MAC", tamper(raw), "s1", "u1", ErrInvalid},
		{"MAC cut short", raw[:len(raw)-2], "s1", "u1", ErrInvalid},
		{"no MAC", raw[:strings.LastIndexByte(raw, '.')+1], "s1", "u1", ErrInvalid},
		{"claims changed, MAC kept", reclaim(raw, `{"show":"s1","seq":1,"sub":"u1","aud":"waitroom-place","exp":`+
			"9999999999"+`,"iat":1}`), "s1", "u1", ErrInvalid},
		{"an extra segment", header + ".e30" + raw[len(header):], "s1", "u1", ErrInvalid},
		{"garbage", "x.y.z", "s1", "u1", ErrInvalid},
		{"header only", header, "s1", "u1", ErrInvalid},
		{"empty", "", "s1", "u1", ErrInvalid},
	} {
		if r, err := v.Verify(c.raw, c.show, c.user); !errors.Is(err, c.want) || r != nil {
			t.Errorf("%s: got %+v, %v, want %v", c.name, r, err, c.want)
		}
	}
	// And a receipt is no admission token.
	if _, err := NewVerifier(NewStaticKeys(is.Keys()...), 0).Verify(raw, "s1", "u1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("receipt as admission: got %v, want ErrInvalid", err)
	}
}

// Claims a MAC cannot be forged for are still checked: a receipt the waiting room itself made wrong (or an
// older format) must not prove a place.
func TestReceiptClaims(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	v := NewReceiptVerifier(is, 0)
	rk := is.receipts[0]
	exp := time.Now().Add(time.Hour).Unix()
	made := func(claims string) string {
		signed := rk.header + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
		return signed + "." + base64.RawURLEncoding.EncodeToString(rk.appendMAC(nil, []byte(signed)))
	}
	tail := `,"exp":` + strconv.FormatInt(exp, 10) + `,"iat":1}`
	for name, claims := range map[string]string{
		"no seq":         `{"show":"s1","sub":"u1","aud":"waitroom-place"` + tail,
		"negative seq":   `{"show":"s1","seq":-1,"sub":"u1","aud":"waitroom-place"` + tail,
		"no sub":         `{"show":"s1","seq":1,"aud":"waitroom-place"` + tail,
		"no exp":         `{"show":"s1","seq":1,"sub":"u1","aud":"waitroom-place","iat":1}`,
		"no iat":         `{"show":"s1","seq":1,"sub":"u1","aud":"waitroom-place","exp":` + strconv.FormatInt(exp, 10) + `}`,
		"audience":       `{"show":"s1","seq":1,"sub":"u1","aud":"booking"` + tail,
		"two audiences":  `{"show":"s1","seq":1,"sub":"u1","aud":["waitroom-place","booking"]` + tail,
		"not JSON":       `{"show":`,
		"seq not number": `{"show":"s1","seq":"1","sub":"u1","aud":"waitroom-place"` + tail,
	} {
		if r, err := v.Verify(made(claims), "s1", "u1"); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %+v, %v, want ErrInvalid", name, r, err)
		}
	}
	if r, err := v.Verify(made(`{"show":"s1","seq":7,"sub":"u1","aud":["waitroom-place"]`+tail), "s1", "u1"); err != nil || r.Seq != 7 {
		t.Errorf("aud as an array: got %+v, %v", r, err)
	}
}

// A receipt is a standard HS256 JWT under the derived key, and ids that need escaping survive the hand-written
// encoding.
func TestReceiptIsHS256JWT(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	k.ID = `kid "quoted"`
	is := NewIssuer(k)
	secret, err := hkdf.Key(sha256.New, k.Private.Seed(), nil, receiptInfo, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, user := range []string{"u1", `auth0|"quoted"\back`, "ünïcode<&>", "tab\there"} {
		raw, err := is.IssueReceipt(user, "show-1.a:b", 9, now)
		if err != nil {
			t.Fatal(err)
		}
		var c Receipt
		tok, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return secret, nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(ReceiptAudience), jwt.WithExpirationRequired())
		if err != nil || tok.Header["kid"] != k.ID || tok.Header["typ"] != "JWT" {
			t.Fatalf("%q: as an HS256 JWT: %v %v", user, tok, err)
		}
		if c.Subject != user || c.Show != "show-1.a:b" || c.Seq != 9 || c.IssuedAt.Unix() != now.Unix() {
			t.Errorf("%q: claims %+v", user, c)
		}
		if r, err := NewReceiptVerifier(is, 0).Verify(raw, "show-1.a:b", user); err != nil || r.Subject != user {
			t.Errorf("%q: verify: %+v, %v", user, r, err)
		}
	}
}

// During a rotation, receipts made under the previous key still verify when that key is kept whole, and ask to
// be renewed; a key kept only as its public half keeps only its Ed25519 receipts.
func TestReceiptRotation(t *testing.T) {
	t.Parallel()
	old, _ := GenerateKey()
	cur, _ := GenerateKey()
	now := time.Now()
	before, _ := NewIssuer(old).IssueReceipt("u1", "s1", 5, now)
	is := NewIssuer(cur).WithPrevious(old)
	v := NewReceiptVerifier(is, 0)
	r, err := v.Verify(before, "s1", "u1")
	if err != nil || r.Seq != 5 || !r.Renew {
		t.Fatalf("previous key: got %+v, %v", r, err)
	}
	after, _ := is.IssueReceipt("u1", "s1", 5, now)
	if r, err := v.Verify(after, "s1", "u1"); err != nil || r.Renew {
		t.Fatalf("current key: got %+v, %v", r, err)
	}
	if strings.Split(after, ".")[0] == strings.Split(before, ".")[0] {
		t.Error("receipts under the new key carry the old kid")
	}
	// The previous key is published and its admission tokens accepted, as with NewIssuer's public previous keys.
	if ks := is.Keys(); len(ks) != 2 || ks[1].ID != old.ID || !ks[1].Key.Equal(old.Public().Key) {
		t.Errorf("keys %+v", ks)
	}
	// Rotated out entirely, its receipts prove nothing.
	if _, err := NewReceiptVerifier(NewIssuer(cur), 0).Verify(before, "s1", "u1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("dropped key: got %v, want ErrInvalid", err)
	}
	if _, err := NewReceiptVerifier(NewIssuer(cur, old.Public()), 0).Verify(before, "s1", "u1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("public half only: got %v, want ErrInvalid", err)
	}
	// WithPrevious leaves is as it was.
	if len(NewIssuer(cur).WithPrevious().receipts) != 1 {
		t.Error("WithPrevious() added keys")
	}
}

// Ed25519 receipts, the format before the MAC one, still prove a place after the upgrade, under the current or
// a previous published key, with the same checks.
func TestReceiptEd25519(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	old, _ := GenerateKey()
	stranger, _ := GenerateKey()
	now := time.Now()
	v := NewReceiptVerifier(NewIssuer(k, old.Public()), 0)
	for name, key := range map[string]Key{"current key": k, "previous key": old} {
		r, err := v.Verify(ed25519Receipt(t, key, "u1", "s1", 3, now), "s1", "u1")
		if err != nil || r.Seq != 3 || r.Show != "s1" || r.Subject != "u1" || !r.Renew {
			t.Errorf("%s: got %+v, %v", name, r, err)
		}
	}
	raw := ed25519Receipt(t, k, "u1", "s1", 3, now)
	for _, c := range []struct {
		name, raw, show, user string
		want                  error
	}{
		{"wrong show", raw, "s2", "u1", ErrWrongShow},
		{"wrong user", raw, "s1", "u2", ErrWrongUser},
		{"expired", ed25519Receipt(t, k, "u1", "s1", 3, now.Add(-ReceiptTTL-time.Minute)), "s1", "u1", ErrExpired},
		{"tampered", tamper(raw), "s1", "u1", ErrInvalid},
		{"unknown key", ed25519Receipt(t, stranger, "u1", "s1", 3, now), "s1", "u1", ErrInvalid},
	} {
		if r, err := v.Verify(c.raw, c.show, c.user); !errors.Is(err, c.want) || r != nil {
			t.Errorf("%s: got %+v, %v, want %v", c.name, r, err, c.want)
		}
	}
}

// The receipt a join makes, both ways, against the Ed25519 format it replaced (run both in one go: the ratio
// is what counts on a shared machine).
func BenchmarkReceipt(b *testing.B) {
	k, _ := GenerateKey()
	is := NewIssuer(k)
	v := NewReceiptVerifier(is, 0)
	now := time.Now()
	mac, _ := is.IssueReceipt("user-123456", "show-1", 1000001, now)
	ed := ed25519Receipt(b, k, "user-123456", "show-1", 1000001, now)
	b.Run("issue/hs256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := is.IssueReceipt("user-123456", "show-1", 1000001, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("issue/ed25519", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ed25519Receipt(b, k, "user-123456", "show-1", 1000001, now)
		}
	})
	b.Run("verify/hs256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(mac, "show-1", "user-123456"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify/ed25519", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ed, "show-1", "user-123456"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
