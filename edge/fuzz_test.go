package edge

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzMatch: any method and path is matched without panicking, and a gated route always names its show or
// reads it from the body.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"/api/v1/shows/s1/seats", "/shows/x", "/api/v1/bookings/hold", "//", "/API/V1/SHOWS//SEATS",
		"/api/v1/bookings//pay", "/queue/x/join", "/%2e%2e/seats"} {
		f.Add("GET", s)
		f.Add("POST", s)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		r := Match(method, path)
		if r.Guard == RequirePathShowAdmission && r.ShowID == "" {
			t.Fatalf("%s %q gated with no show", method, path)
		}
		if r.Guard == RequirePathShowAdmission && strings.Contains(r.ShowID, "/") {
			t.Fatalf("%s %q: show id %q spans segments", method, path, r.ShowID)
		}
		_ = Classify(method, path).String()
	})
}

// FuzzClientAddr: whatever X-Forwarded-For says, an untrusted peer is its own client, and the answer is always a
// valid address.
func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4, 10.0.0.1", "[::1]:80", "garbage", ",,,", "10.0.0.1,", "::ffff:1.2.3.4"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	trusted, _ := ParseTrustedProxies("10.0.0.0/8")
	f.Fuzz(func(t *testing.T, xff string, viaProxy bool) {
		peer := netip.MustParseAddr("203.0.113.1")
		if viaProxy {
			peer = netip.MustParseAddr("10.9.9.9")
		}
		got := trusted.ClientAddr(peer, []string{xff})
		if !got.IsValid() {
			t.Fatalf("invalid address for %q", xff)
		}
		if !viaProxy && got != peer {
			t.Fatalf("untrusted peer's header %q believed: %v", xff, got)
		}
	})
}
