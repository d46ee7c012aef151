package token

import (
	"testing"
	"time"
)

func TestIsOwn(t *testing.T) {
	is, err := NewUserIssuer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := is.Issue("u1", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// An external provider's token: any JWS whose alg is not HS256 (the external parser refuses HS256).
	external := "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.sig"
	for _, tc := range []struct {
		name string
		raw  string
		want bool
	}{{"guest", own, true}, {"external", external, false}, {"garbage", "x", false}, {"bad header", "!!.e30.x", false}} {
		if got := IsOwn(tc.raw); got != tc.want {
			t.Errorf("%s: IsOwn got %v, want %v", tc.name, got, tc.want)
		}
	}
}
