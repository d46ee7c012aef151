package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrPrivateAddress means a delivery was refused because its URL leads to an address inside the platform's
// network (loopback, private, link-local, ...), where an operator's URL must not reach (server-side request
// forgery: a cloud's metadata service, the database, the admin ports).
var ErrPrivateAddress = errors.New("webhook: the endpoint's address is private")

// sharedSpace is RFC 6598's carrier-grade NAT range, which some clouds use for their own services;
// netip.Addr.IsPrivate does not cover it.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// privateAddr reports whether ip is no place for a webhook to go.
func privateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		sharedSpace.Contains(ip) || (ip.Is4() && ip.As4()[0] == 0) // 0.0.0.0/8 reaches this host on Linux
}

// privateHost reports whether a URL's host is plainly private before any lookup: an address literal in a private
// range, or localhost. Other names are checked where they are dialled (guardedClient).
func privateHost(u *url.URL) bool {
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && privateAddr(ip)
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
