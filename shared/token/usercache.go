package token

import "time"

// UserCache remembers the user tokens a UserVerifier accepted, keyed by the raw token (see verifiedCache for how
// long and how many): checking a token's signature on each request cost the edge more CPU than anything but the
// sockets, and booking more than deciding the hold.
type UserCache struct {
	v *UserVerifier
	*verifiedCache[string]
}

// NewUserCache returns a cache of at most size tokens in front of v.
func NewUserCache(v *UserVerifier, size int, ttl time.Duration) *UserCache {
	return &UserCache{v: v, verifiedCache: newVerifiedCache[string](size, ttl)}
}

// Verify returns the user id of a valid token, as UserVerifier.Verify, from the cache when it can. raw may alias
// a buffer the caller reuses (fiber's): the cache keeps its own copy.
func (c *UserCache) Verify(raw string) (string, error) {
	return c.verify(raw, c.v.verify)
}
