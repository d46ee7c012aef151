package edge

import (
	"fmt"
	"net/netip"
	"strings"
)

// TrustedProxies are the peers (a CDN, a load balancer) whose X-Forwarded-For the edge believes. A header from
// anyone else is a claim the client made about itself, and believing it would let one client spread its requests
// over invented addresses and escape its rate limit.
type TrustedProxies struct {
	Prefixes
}

// ParseTrustedProxies reads a comma-separated list of CIDRs or single addresses. An empty list trusts nobody.
func ParseTrustedProxies(list string) (TrustedProxies, error) {
	p, err := ParsePrefixes(list)
	return TrustedProxies{p}, err
}

// Trusts reports whether addr belongs to a trusted proxy.
func (t TrustedProxies) Trusts(addr netip.Addr) bool { return t.Contains(addr) }

// Prefixes is a set of address ranges.
type Prefixes struct {
	prefixes []netip.Prefix
}

// ParsePrefixes reads a comma-separated list of CIDRs or single addresses.
func ParsePrefixes(list string) (Prefixes, error) {
	var t Prefixes
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return Prefixes{}, fmt.Errorf("edge: address range %q: %w", s, err)
			}
			s = netip.PrefixFrom(a, a.BitLen()).String()
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Prefixes{}, fmt.Errorf("edge: address range %q: %w", s, err)
		}
		t.prefixes = append(t.prefixes, p.Masked())
	}
	return t, nil
}

// Contains reports whether addr is in one of the ranges.
func (t Prefixes) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ClientAddr returns the address of the client behind peer. X-Forwarded-For values (each a comma-separated list,
// the nearest hop last) are walked from the right only while the hop that appended the entry is trusted: the first
// untrusted address is the client, because everything left of it was written by the client itself. A malformed
// entry stops the walk at the last address known to be real.
func (t TrustedProxies) ClientAddr(peer netip.Addr, xff []string) netip.Addr {
	client := peer.Unmap()
	if !t.Trusts(client) {
		return client
	}
	for i := len(xff) - 1; i >= 0; i-- {
		parts := strings.Split(xff[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			s := strings.TrimSpace(parts[j])
			if s == "" {
				continue
			}
			a, err := parseHop(s)
			if err != nil {
				return client
			}
			client = a
			if !t.Trusts(a) {
				return a
			}
		}
	}
	return client
}

// parseHop reads one X-Forwarded-For entry: an address, possibly bracketed or with a port as some proxies write it.
func parseHop(s string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap(), nil
}
