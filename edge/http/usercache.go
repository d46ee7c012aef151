package http

import (
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// userCache remembers verified user tokens, keyed by the raw token: a fan in a flash crowd sends many requests
// with one token, and checking its signature on each cost the edge more CPU than anything but the sockets. An entry
// lasts until the token expires (no leeway: the verifier's clock-skew leeway applies only to tokens it checks
// itself) and at most userCacheTTL, so a key an external issuer retires stops being trusted soon after. Only
// verified tokens are kept; a forged or expired one is checked, and refused, every time.
type userCache struct {
	mu  sync.RWMutex
	m   map[string]userEntry
	max int
	now func() time.Time
}

type userEntry struct {
	id    string
	until time.Time
}

const (
	userCacheTTL  = 10 * time.Second
	userCacheSize = 100000 // about 300 bytes each with the token
)

func newUserCache(max int) *userCache {
	return &userCache{m: make(map[string]userEntry), max: max, now: time.Now}
}

// get returns the user of a cached, unexpired token. raw may alias a buffer fiber reuses: it is only looked up.
func (u *userCache) get(raw string) (string, bool) {
	u.mu.RLock()
	e, ok := u.m[raw]
	u.mu.RUnlock()
	if !ok || !u.now().Before(e.until) {
		return "", false
	}
	return e.id, true
}

// put remembers a token the verifier has just accepted for user id, until its expiry.
func (u *userCache) put(raw, id string) {
	var claims jwt.RegisteredClaims
	if _, _, err := claimsParser.ParseUnverified(raw, &claims); err != nil || claims.ExpiresAt == nil {
		return // verified, so this does not happen; without an expiry it is not cached
	}
	now := u.now()
	until := now.Add(userCacheTTL)
	if exp := claims.ExpiresAt.Time; exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return // accepted within the verifier's leeway only
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.m) >= u.max {
		for k, e := range u.m {
			if !now.Before(e.until) {
				delete(u.m, k)
			}
		}
		if len(u.m) >= u.max {
			clear(u.m) // a crude bound: forget everything rather than grow
		}
	}
	u.m[strings.Clone(raw)] = userEntry{id: strings.Clone(id), until: until}
}
