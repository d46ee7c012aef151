package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flashseat/flashseat/shared/token"
)

// Gate decides whether a request for a show may pass the waiting room.
type Gate struct {
	keeper   *Keeper
	verifier *token.Verifier
	ttl      time.Duration

	// cache is bounded against requests for made-up show ids; when full it forgets the show least recently
	// asked for, not every show at once (which would send every replica's next requests to Redis together).
	// Lookups only read it (Peek, under the cache's read lock): every hold asks, and moving the entry to the
	// front would take the exclusive lock each time. A show asked for is put back at the front when its entry
	// is renewed, once a ttl, which keeps the order to within a second.
	cache *lru.Cache[string, cached]
	// reads shares one settings read among the requests that find a show's entry stale together: without it,
	// every request in flight on the show read Redis at the same moment, once a second.
	reads flights[Settings]
	// revoked batches the revocation lookups of concurrent checks on a show into shared round trips.
	revoked revocations
}

const gateCacheSize = 100000

// The verified admission tokens' bounds (token.NewCachedVerifier): one token per admitted fan, and a key the
// edge retires (booking reads the edge's JWKS) stops being trusted within tokenCacheTTL of being dropped.
const (
	tokenCacheSize = 100000
	tokenCacheTTL  = 10 * time.Second
)

type cached struct {
	s  Settings
	at time.Time
}

// NewGate returns a gate reading queue state through keeper and verifying tokens against keys. A show's settings
// are cached here for at most a second, so an operator's switch reaches every replica within a second (at once
// where the change is announced, see Forget) without a Redis call per request.
func NewGate(keeper *Keeper, keys token.KeySource, leeway time.Duration) *Gate {
	cache, _ := lru.New[string, cached](gateCacheSize) // errs only for a size below 1
	const ttl = time.Second
	return &Gate{keeper: keeper, verifier: token.NewCachedVerifier(keys, leeway, tokenCacheSize, tokenCacheTTL),
		ttl: ttl, cache: cache, reads: flights[Settings]{maxAge: ttl}, revoked: revocations{cache: keeper.cache}}
}

// Verifier is the gate's admission-token verifier, with its cache of verified tokens: a route that checks a token
// without the gate (the edge's pay route) shares it rather than verifying the same tokens into a second cache.
func (g *Gate) Verifier() *token.Verifier { return g.verifier }

// Keeper is the gate's keeper, whose Release ends an admission.
func (g *Gate) Keeper() *Keeper { return g.keeper }

// Settings returns showID's settings. An error (wrapping ErrUnavailable) means they cannot be known: the caller
// must refuse, never treat the queue as off. Callers that find the show's entry stale together share one read,
// begun under a second before each of them (a read that began longer ago is not joined: the next one starts), and
// each waits for it until its own context ends.
func (g *Gate) Settings(ctx context.Context, showID string) (Settings, error) {
	if c, ok := g.cache.Peek(showID); ok && time.Since(c.at) < g.ttl {
		return c.s, nil
	}
	return g.reads.do(ctx, showID, func(ctx context.Context) (Settings, error) {
		return g.keeper.Settings(ctx, showID)
	}, func(s Settings, began time.Time) {
		// Dated when the read began: what it read is no older than that.
		g.cache.Add(showID, cached{s: s, at: began})
	})
}

// Enabled reports whether showID's queue is on.
func (g *Gate) Enabled(ctx context.Context, showID string) (bool, error) {
	s, err := g.Settings(ctx, showID)
	return s.Enabled, err
}

// Open reports whether showID's queue is off by the settings this process read under a second ago, without a
// store call: a gate may then pass the request at once (no deadline to arm, no token to look for). false means
// only "not known here": ask Check.
func (g *Gate) Open(showID string) bool {
	c, ok := g.cache.Peek(showID)
	return ok && time.Since(c.at) < g.ttl && !c.s.Enabled
}

// Forget drops the cached settings of a show, for a replica that heard of a settings change. A read under way,
// which may have begun before the change, is neither joined by later callers nor cached when it ends.
func (g *Gate) Forget(showID string) {
	g.reads.forget(showID, func() { g.cache.Remove(showID) })
}

// Check lets a request by userID for showID pass. With the queue off it returns (nil, nil). With it on, raw must
// be a valid, unrevoked admission token for this show and this user; the claims are returned so the caller can
// record the jti. Any refusal wraps ErrRequired; a state that cannot be read wraps ErrUnavailable.
func (g *Gate) Check(ctx context.Context, showID, userID, raw string) (*token.Admission, error) {
	on, err := g.Enabled(ctx, showID)
	if err != nil || !on {
		return nil, err
	}
	if raw == "" {
		return nil, ErrRequired
	}
	claims, err := g.verifier.Verify(raw, showID, userID)
	switch {
	case errors.Is(err, token.ErrKeysUnavailable):
		// The issuer's keys are out of reach (booking reads them from the edge's JWKS): the token is not known
		// to be bad, so the fan is told to retry, not sent back to the queue.
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrRequired, err)
	}
	// Checks on the show share round trips (revocations), each answered by one sent after it began.
	revoked, present, err := g.revoked.lookup(ctx, showID, claims.ID)
	if err == nil && !present {
		// The settings in memory are under a second old, but the cache lost the show's state since (Redis
		// restarted empty): its revocations are gone too, so restore before trusting a "not revoked".
		g.Forget(showID)
		s, rerr := g.keeper.Restore(ctx, showID)
		if rerr != nil {
			return nil, rerr
		}
		if !s.Enabled {
			return nil, nil
		}
		if revoked, present, err = g.revoked.lookup(ctx, showID, claims.ID); err == nil && !present {
			err = fmt.Errorf("show %s: state lost again", showID)
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: revocation: %w", ErrUnavailable, err)
	case revoked:
		return nil, fmt.Errorf("%w: %w", ErrRequired, token.ErrRevoked)
	}
	return claims, nil
}

// Release ends the admission jti of userID to showID (booking: the fan's booking was confirmed or cancelled).
func (g *Gate) Release(ctx context.Context, showID, userID, jti string, exp time.Time) error {
	return g.keeper.Release(ctx, Grant{ShowID: showID, UserID: userID, JTI: jti, ExpiresAt: exp})
}

// Reason names why Check refused a token (an error wrapping ErrRequired), for the refusal's problem body, logs and
// metrics: "expired", "revoked", "wrong_show", "wrong_user", "invalid" (malformed, forged, unknown key, wrong
// audience), or "missing" when no token came.
func Reason(err error) string {
	switch {
	case errors.Is(err, token.ErrExpired):
		return "expired"
	case errors.Is(err, token.ErrWrongShow):
		return "wrong_show"
	case errors.Is(err, token.ErrWrongUser):
		return "wrong_user"
	case errors.Is(err, token.ErrRevoked):
		return "revoked"
	case errors.Is(err, token.ErrInvalid):
		return "invalid"
	}
	return "missing"
}
