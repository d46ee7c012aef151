package token

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAdmissionRoundTrip(t *testing.T) {
	t.Parallel()
	cur, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	old, _ := GenerateKey()
	is := NewIssuer(cur, old.Public())
	now := time.Now()
	raw, exp, err := is.Issue("u1", "s1", "j1", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Before(now) {
		t.Fatalf("exp %v before now", exp)
	}
	v := NewVerifier(is.JWKS().Ed25519Keys(), time.Second)
	c, err := v.Verify(raw, "s1", "u1")
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if c.ID != "j1" || c.Show != "s1" || c.Subject != "u1" {
		t.Fatalf("claims = %+v", c)
	}

	// A token signed by the previous key still verifies after rotation.
	rotated := NewIssuer(old)
	rawOld, _, _ := rotated.Issue("u1", "s1", "j2", now, time.Minute)
	if _, err := v.Verify(rawOld, "s1", "u1"); err != nil {
		t.Fatalf("previous key: %v", err)
	}

	stranger, _ := GenerateKey()
	forged, _, _ := NewIssuer(stranger).Issue("u1", "s1", "j3", now, time.Minute)
	expired, _, _ := is.Issue("u1", "s1", "j4", now.Add(-time.Hour), time.Minute)
	tests := []struct {
		name, raw, show, user string
		want                  error
	}{
		{"wrong show", raw, "s2", "u1", ErrWrongShow},
		{"wrong user", raw, "s1", "u2", ErrWrongUser},
		{"forged", forged, "s1", "u1", ErrInvalid},
		{"expired", expired, "s1", "u1", ErrExpired},
		{"junk", "not.a.jwt", "s1", "u1", ErrInvalid},
		{"empty", "", "s1", "u1", ErrInvalid},
		{"tampered", tamper(raw), "s1", "u1", ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := v.Verify(tc.raw, tc.show, tc.user); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRemoteKeys(t *testing.T) {
	t.Parallel()
	k, _ := GenerateKey()
	is := NewIssuer(k)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(is.JWKS())
	}))
	defer srv.Close()
	raw, _, _ := is.Issue("u", "s", "j", time.Now(), time.Minute)
	if _, err := NewVerifier(NewRemoteKeys(srv.URL, nil), 0).Verify(raw, "s", "u"); err != nil {
		t.Fatalf("remote verify: %v", err)
	}
}

func TestUserToken(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	is, err := NewUserIssuer(secret)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := is.Issue("guest-1", time.Now(), time.Hour)
	v := NewUserVerifier(secret, nil, 0)
	if got, err := v.Verify(raw); err != nil || got != "guest-1" {
		t.Fatalf("got %q, %v", got, err)
	}
	other := NewUserVerifier([]byte("another-secret-another-secret-xx"), nil, 0)
	if _, err := other.Verify(raw); !errors.Is(err, ErrInvalid) {
		t.Fatalf("other secret: got %v, want ErrInvalid", err)
	}
	old, _ := is.Issue("guest-1", time.Now().Add(-2*time.Hour), time.Hour)
	if _, err := v.Verify(old); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: got %v", err)
	}
	if _, err := NewUserIssuer([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}

// tamper changes the first character of the token's signature. Not its last: base64url ignores the final
// character's low bits, so a change there can leave the signature as it was (it did, about once in 256 runs).
func tamper(raw string) string {
	i := strings.LastIndexByte(raw, '.') + 1
	c := byte('A')
	if raw[i] == 'A' {
		c = 'B'
	}
	return raw[:i] + string(c) + raw[i+1:]
}
