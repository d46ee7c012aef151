package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrPrivateAddress means a delivery was refused because its URL leads to an address inside the platform's
// network (loopback, private, link-local, ...), where an operator's URL must not reach (server-side request
// forgery: a cloud's metadata service, the database, the admin ports).
var ErrPrivateAddress = errors.New("webhook: the endpoint's address is private")

// Ranges netip.Addr's predicates do not cover: RFC 6598's carrier-grade NAT range, which some clouds use for their
// own services; IPv6's deprecated site-local range; and the IPv6 ranges that carry an IPv4 address inside
// (IPv4-compatible, NAT64), checked by the address they carry.
var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	embedding   = []netip.Prefix{netip.MustParsePrefix("::/96"), netip.MustParsePrefix("64:ff9b::/96")}
)

// privateAddr reports whether ip is no place for a webhook to go.
func privateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() && !ip.IsUnspecified() && !ip.IsLoopback() {
		for _, p := range embedding {
			if p.Contains(ip) {
				b := ip.As16()
				return privateAddr(netip.AddrFrom4([4]byte(b[12:])))
			}
		}
	}
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		sharedSpace.Contains(ip) || siteLocal.Contains(ip) ||
		(ip.Is4() && ip.As4()[0] == 0) // 0.0.0.0/8 reaches this host on Linux
}

// privateHost reports whether a URL's host is plainly private before any lookup: localhost, or an address in a
// private range however it is spelt. Browsers, curl and the C resolver read a host whose last label is a number
// as an IPv4 address in inet_aton's forms (http://2130706433/, http://127.1/, http://0x7f.0.0.1/,
// http://0177.0.0.1/ are all loopback), so it is read here the same way, and one that is no address at all
// (http://1.2.3.4.5/, http://0x1g/) is refused too: what it reaches depends on who reads it. Other names are
// checked where they are dialled (guardedClient).
func privateHost(u *url.URL) bool {
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return privateAddr(ip)
	}
	labels := strings.Split(h, ".")
	if !numberLike(labels[len(labels)-1]) {
		return false // a name
	}
	ip, ok := inetAton(labels)
	return !ok || privateAddr(ip)
}

// inetAton reads an IPv4 address as inet_aton does: one to four numbers (decimal, octal with a leading 0, hex
// with 0x), all but the last a byte, the last filling the bytes that remain (127.1 is 127.0.0.1).
func inetAton(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, l := range labels {
		n, ok := inetNumber(l)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			b[i] = byte(n)
			continue
		}
		rest := 4 - i // bytes the last number fills
		if rest < 4 && n >= 1<<(8*rest) {
			return netip.Addr{}, false
		}
		for j := 3; j >= i; j-- {
			b[j] = byte(n)
			n >>= 8
		}
	}
	return netip.AddrFrom4(b), true
}

// inetNumber reads one part of an inet_aton address, at most 32 bits.
func inetNumber(s string) (uint64, bool) {
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true // "0x" is 0 to inet_aton
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}

// numberLike reports whether a label is what a URL reader takes for a number, valid or not: decimal digits, or
// 0x and anything.
func numberLike(s string) bool {
	if strings.HasPrefix(s, "0x") {
		return true
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// guardedClient is the HTTP client deliveries go through: it refuses to connect to a private address, checked
// on the address actually dialled, after the name was resolved, so a name that resolves to a public address
// when registered and to a private one when sent (DNS rebinding) is refused too. No proxy from the environment
// (the proxy, not the endpoint, would be dialled) and no redirects (a delivery goes to the registered URL or
// nowhere).
func guardedClient(timeout time.Duration, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || privateAddr(ip) {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
			}
			return nil
		}
	}
	return &http.Client{Timeout: timeout,
		Transport: &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 64,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
