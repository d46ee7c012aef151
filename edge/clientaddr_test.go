package edge

import (
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.7, 2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	tests := []struct {
		name string
		peer netip.Addr
		xff  []string
		want netip.Addr
	}{
		{"untrusted peer ignores header", a("203.0.113.9"), []string{"1.2.3.4"}, a("203.0.113.9")},
		{"trusted peer without header", a("10.1.1.1"), nil, a("10.1.1.1")},
		{"trusted peer, one hop", a("10.1.1.1"), []string{"198.51.100.5"}, a("198.51.100.5")},
		{"client-written entries left of the real one are ignored", a("10.1.1.1"),
			[]string{"6.6.6.6, 198.51.100.5"}, a("198.51.100.5")},
		{"chain of trusted proxies", a("10.1.1.1"), []string{"198.51.100.5, 192.0.2.7", "10.2.2.2"},
			a("198.51.100.5")},
		{"all trusted gives leftmost", a("10.1.1.1"), []string{"10.3.3.3, 10.4.4.4"}, a("10.3.3.3")},
		{"malformed entry stops at last real hop", a("10.1.1.1"), []string{"198.51.100.5, garbage"},
			a("10.1.1.1")},
		{"entry with port", a("10.1.1.1"), []string{"198.51.100.5:4711"}, a("198.51.100.5")},
		{"ipv6 entry", a("10.1.1.1"), []string{"[2a00::1]"}, a("2a00::1")},
		{"ipv4-mapped peer", a("::ffff:10.1.1.1"), []string{"198.51.100.5"}, a("198.51.100.5")},
		{"empty entries skipped", a("10.1.1.1"), []string{"198.51.100.5, ,"}, a("198.51.100.5")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := trusted.ClientAddr(tc.peer, tc.xff); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseTrustedProxiesRejectsJunk(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"nope", "10.0.0.0/99", "1.2.3.4/8/1"} {
		if _, err := ParseTrustedProxies(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if p, err := ParseTrustedProxies(""); err != nil || p.Trusts(netip.MustParseAddr("127.0.0.1")) {
		t.Fatalf("empty list: %v, trusts loopback", err)
	}
}

func TestLimitKey(t *testing.T) {
	t.Parallel()
	if got := LimitKey(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")); got != "2001:db8:1:2::/64" {
		t.Fatalf("ipv6 key = %q", got)
	}
	if got := LimitKey(netip.MustParseAddr("::ffff:198.51.100.5")); got != "198.51.100.5" {
		t.Fatalf("mapped key = %q", got)
	}
}
