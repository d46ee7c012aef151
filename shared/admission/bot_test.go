package admission

import (
	"net/netip"
	"testing"
)

// TestParsePrefix: every spelling of one client's prefix reads as the form Prefix computes for that client, and
// what is no prefix a client could have is refused.
func TestParsePrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"an IPv4 address", "203.0.113.7", "203.0.113.7"},
		{"its /32", "203.0.113.7/32", "203.0.113.7"},
		{"spaces around", " 203.0.113.7 ", "203.0.113.7"},
		{"IPv4-mapped", "::ffff:203.0.113.8", "203.0.113.8"},
		{"IPv4-mapped /128", "::ffff:203.0.113.8/128", "203.0.113.8"},
		{"an IPv6 address", "2001:db8:1:2::5", "2001:db8:1:2::/64"},
		{"an IPv6 /64", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"an IPv6 /64 with host bits", "2001:db8:1:2::5/64", "2001:db8:1:2::/64"},
		{"an IPv6 /128", "2001:db8:1:2::5/128", "2001:db8:1:2::/64"},
		{"an IPv6 /96", "2001:db8:1:2::/96", "2001:db8:1:2::/64"},
		{"a wide IPv4 prefix", "203.0.113.0/24", ""},
		{"a wide IPv6 prefix", "2001:db8::/48", ""},
		{"IPv4-mapped, wide", "::ffff:203.0.113.0/120", ""},
		{"a zone", "fe80::1%eth0", ""},
		{"garbage", "not-an-address", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePrefix(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ParsePrefix(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParsePrefix(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestBlockedCanonical: a list of blocked prefixes in any spelling blocks the client each entry names, is stored
// in one spelling each once, and a list with garbage does not validate.
func TestBlockedCanonical(t *testing.T) {
	t.Parallel()
	b := DefaultBotProtection()
	b.BlockedPrefixes = "203.0.113.7/32, ::ffff:203.0.113.8,2001:db8:1:2::5,203.0.113.7"
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"203.0.113.7", "203.0.113.8", "::ffff:203.0.113.8", "2001:db8:1:2:ffff::1"} {
		if p := Prefix(netip.MustParseAddr(client)); !b.IsBlocked(p) {
			t.Errorf("a client at %s (prefix %s) is not blocked by %q", client, p, b.BlockedPrefixes)
		}
	}
	if b.IsBlocked(Prefix(netip.MustParseAddr("203.0.113.9"))) {
		t.Error("a client of no blocked prefix is blocked")
	}
	if got, want := b.Canonical().BlockedPrefixes, "203.0.113.7,203.0.113.8,2001:db8:1:2::/64"; got != want {
		t.Errorf("canonical %q, want %q", got, want)
	}
	b.BlockedPrefixes = "203.0.113.7,nonsense"
	if err := b.Validate(); err == nil {
		t.Error("garbage validated")
	}
}
