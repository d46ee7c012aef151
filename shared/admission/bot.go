package admission

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// BotProtection is a show's defence of its queue against scripts (the waiting room's guard applies it): a proof
// of work for every new place, whose difficulty rises steeply with the recent challenges of the client's address
// prefix (an IPv4 address or an IPv6 /64), a limit of places per prefix, an optional human check, and an option
// to admit only accounts of the external identity provider.
//
// The difficulty is ALTCHA's maxnumber: a client tries at most that many hashes, half of it on average. For a
// prefix whose decayed count of recent challenges is p, it is
//
//	BaseDifficulty x 2^(max(0, p - FreeChallenges) / DoublingChallenges), at most MaxDifficulty
//
// times 2 or 4 while the show takes more than LoadJoinsPerMinute (or four times that) new places a minute. The
// defaults (BENCHMARKS.md has the figures) cost a fan on a phone well under a second, and a script from one
// address on two native cores a few seconds a place once it has taken a dozen.
type BotProtection struct {
	// Enabled asks a proof of work of every new place while the queue is on. On by default.
	Enabled bool `json:"enabled"`
	// BaseDifficulty is the maxnumber of a prefix's first challenges.
	BaseDifficulty int64 `json:"baseDifficulty"`
	// MaxDifficulty caps it: the most any one client can be asked, which is also what a fan behind a busy
	// shared address (an office, a carrier NAT) may have to pay.
	MaxDifficulty int64 `json:"maxDifficulty"`
	// FreeChallenges is how many recent challenges of one prefix cost only the base difficulty.
	FreeChallenges float64 `json:"freeChallenges"`
	// DoublingChallenges is how many more recent challenges double the difficulty.
	DoublingChallenges float64 `json:"doublingChallenges"`
	// HalfLifeSeconds is how fast a prefix's count of recent challenges decays.
	HalfLifeSeconds int `json:"halfLifeSeconds"`
	// LoadJoinsPerMinute is the show's rate of new places above which every difficulty doubles (quadruples
	// above four times it); 0 turns the load factor off.
	LoadJoinsPerMinute int `json:"loadJoinsPerMinute"`
	// PrefixPlaces is the most places one prefix may hold in the show's queue; a client of a prefix over it is
	// a suspected bot.
	PrefixPlaces int `json:"prefixPlaces"`
	// Suspects is what a suspected bot gets: SuspectsRefuse (a 429 or 403 problem) or SuspectsShadow (an
	// infinite queue: a place that looks real and never comes up, so the script learns nothing).
	Suspects string `json:"suspects"`
	// HumanCheck also asks for the deployment's human check (Turnstile, hCaptcha or reCAPTCHA) on a new place.
	HumanCheck bool `json:"humanCheck"`
	// AccountsOnly lets only user tokens of the external identity provider join (a verified-fan sale); guest
	// identities are refused.
	AccountsOnly bool `json:"accountsOnly"`
	// BlockedPrefixes are prefixes an operator blocked for this show, comma-separated ("203.0.113.7,
	// 2001:db8:1:2::/64"); their clients are suspects.
	BlockedPrefixes string `json:"blockedPrefixes"`
}

// What a suspected bot gets.
const (
	SuspectsRefuse = "refuse"
	SuspectsShadow = "shadow"
)

// DefaultBotProtection is on, at the difficulties BENCHMARKS.md measures.
func DefaultBotProtection() BotProtection {
	return BotProtection{Enabled: true, BaseDifficulty: 100_000, MaxDifficulty: 100_000_000, FreeChallenges: 2,
		DoublingChallenges: 1, HalfLifeSeconds: 600, LoadJoinsPerMinute: 6000, PrefixPlaces: 300,
		Suspects: SuspectsRefuse}
}

// Validate rejects settings no guard can run with.
func (b BotProtection) Validate() error {
	switch {
	case b.BaseDifficulty < 1 || b.BaseDifficulty > 1e12:
		return errors.New("botProtection.baseDifficulty must be in [1, 1e12]")
	case b.MaxDifficulty < b.BaseDifficulty || b.MaxDifficulty > 1e12:
		return errors.New("botProtection.maxDifficulty must be in [baseDifficulty, 1e12]")
	case b.FreeChallenges < 0 || b.FreeChallenges > 1e6:
		return errors.New("botProtection.freeChallenges must be in [0, 1e6]")
	case b.DoublingChallenges < 0.1 || b.DoublingChallenges > 1e6:
		return errors.New("botProtection.doublingChallenges must be in [0.1, 1e6]")
	case b.HalfLifeSeconds < 1 || b.HalfLifeSeconds > 86400:
		return errors.New("botProtection.halfLifeSeconds must be in [1, 86400]")
	case b.LoadJoinsPerMinute < 0:
		return errors.New("botProtection.loadJoinsPerMinute must not be negative")
	case b.PrefixPlaces < 1:
		return errors.New("botProtection.prefixPlaces must be at least 1")
	case b.Suspects != SuspectsRefuse && b.Suspects != SuspectsShadow:
		return errors.New(`botProtection.suspects must be "refuse" or "shadow"`)
	}
	for _, p := range strings.Split(b.BlockedPrefixes, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := ParsePrefix(p); err != nil {
			return errors.New("botProtection.blockedPrefixes: " + err.Error())
		}
	}
	return nil
}

// Blocked lists the blocked prefixes in Prefix's form, each once, whatever spelling they were written in
// ("203.0.113.7/32" and "::ffff:203.0.113.7" are "203.0.113.7"): so a block written any valid way blocks, and
// an unblock finds it. An entry that is no prefix (Validate refuses it) is listed as written.
func (b BotProtection) Blocked() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(b.BlockedPrefixes, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if c, err := ParsePrefix(p); err == nil {
			p = c
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Canonical returns b with its blocked prefixes in Prefix's form (Blocked): how they are stored, whoever
// writes them.
func (b BotProtection) Canonical() BotProtection {
	b.BlockedPrefixes = strings.Join(b.Blocked(), ",")
	return b
}

// IsBlocked reports whether prefix (as Prefix writes it) is blocked.
func (b BotProtection) IsBlocked(prefix string) bool {
	return slices.Contains(b.Blocked(), prefix)
}

// ClientHeader is the request header in which the edge tells booking the client's address as the edge decided
// it (behind a CDN, the address its trusted proxies name, not the CDN's own), so that both count a client under
// the same prefix. The edge drops any copy a client sends.
const ClientHeader = "Flashseat-Client-Addr"

// Prefix is the address prefix a client is counted under: an IPv4 address whole, an IPv6 address's /64 (one
// subscriber's usual allocation, so a host cannot step through its own /64 to escape its count).
func Prefix(a netip.Addr) string {
	a = a.Unmap()
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64) // a valid IPv6 address always has a /64
	return p.String()
}

// ParsePrefix reads a prefix as an operator writes it into Prefix's form, the one a client's address is counted
// and compared under: an IPv4 address or its /32 is the address; an IPv4-mapped IPv6 address (or its /128) is the
// IPv4 address; an IPv6 address, or any IPv6 prefix of /64 or longer, is its /64. Anything else (a shorter
// prefix, which no client's prefix could equal, or no address at all) is refused.
func ParsePrefix(s string) (string, error) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return Prefix(a), nil
	}
	p, err := netip.ParsePrefix(s)
	bits := p.Bits()
	if err == nil && p.Addr().Is4In6() {
		bits -= 96
	}
	switch a := p.Addr().Unmap(); {
	case err != nil:
	case a.Is4() && bits == 32, a.Is6() && bits >= 64:
		return Prefix(a), nil
	}
	return "", errors.New("a prefix is an IPv4 address (or its /32) or an IPv6 address or /64: " + strconv.Quote(s))
}
