// Package admission is the waiting-room contract edge, waitroom and booking share: where a show's queue settings
// live, how an admission token travels with a request, and the one check that decides whether a request for a show
// may pass the queue. Edge and booking both run the check (defence in depth); waitroom writes the settings and
// issues the tokens.
package admission

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

// Header carries an admission token on API requests.
const Header = "X-Admission-Token"

// CookieName is the cookie the waiting room sets for a show's admission token, for browsers.
func CookieName(showID string) string { return "fs_adm_" + showID }

// ErrRequired means the show's queue is on and the request has no acceptable admission token. Errors from Check
// wrap it together with the reason (token.ErrExpired, token.ErrWrongShow, token.ErrRevoked, ...).
var ErrRequired = errors.New("admission: admission token required")

// Settings are an operator's settings for a show's waiting room.
type Settings struct {
	Enabled         bool    `json:"enabled"`
	AdmitPerSecond  float64 `json:"admitPerSecond"`
	MaxActive       int     `json:"maxActive"`
	TokenTTLSeconds int     `json:"tokenTtlSeconds"`
}

// DefaultSettings apply to a show whose operator has set nothing: queue off.
func DefaultSettings() Settings {
	return Settings{Enabled: false, AdmitPerSecond: 10, MaxActive: 200, TokenTTLSeconds: 600}
}

// Validate rejects settings no queue can run with.
func (s Settings) Validate() error {
	switch {
	case s.AdmitPerSecond <= 0 || s.AdmitPerSecond > 100000:
		return errors.New("admitPerSecond must be in (0, 100000]")
	case s.MaxActive < 1 || s.MaxActive > 10000000:
		return errors.New("maxActive must be in [1, 10000000]")
	case s.TokenTTLSeconds < 10 || s.TokenTTLSeconds > 86400:
		return errors.New("tokenTtlSeconds must be in [10, 86400]")
	}
	return nil
}

// LoadSettings reads a show's settings; missing fields keep their defaults.
func LoadSettings(ctx context.Context, rdb redis.Cmdable, showID string) (Settings, error) {
	m, err := rdb.HGetAll(ctx, rediskey.QueueConfig(showID)).Result()
	if err != nil {
		return Settings{}, fmt.Errorf("admission: load settings: %w", err)
	}
	s := DefaultSettings()
	if v, ok := m[rediskey.QueueEnabled]; ok {
		s.Enabled = v == "1"
	}
	if v, err := strconv.ParseFloat(m[rediskey.QueueAdmitPerSecond], 64); err == nil {
		s.AdmitPerSecond = v
	}
	if v, err := strconv.Atoi(m[rediskey.QueueMaxActive]); err == nil {
		s.MaxActive = v
	}
	if v, err := strconv.Atoi(m[rediskey.QueueTokenTTLSeconds]); err == nil {
		s.TokenTTLSeconds = v
	}
	return s, nil
}

// SaveSettings stores a show's settings and announces the change on rediskey.QueueConfigEvents, so every replica
// applies it at once rather than at its next cache refresh.
func SaveSettings(ctx context.Context, rdb redis.Cmdable, showID string, s Settings) error {
	enabled := "0"
	if s.Enabled {
		enabled = "1"
	}
	if err := rdb.HSet(ctx, rediskey.QueueConfig(showID),
		rediskey.QueueEnabled, enabled,
		rediskey.QueueAdmitPerSecond, strconv.FormatFloat(s.AdmitPerSecond, 'f', -1, 64),
		rediskey.QueueMaxActive, s.MaxActive,
		rediskey.QueueTokenTTLSeconds, s.TokenTTLSeconds,
	).Err(); err != nil {
		return fmt.Errorf("admission: save settings: %w", err)
	}
	if err := rdb.Publish(ctx, rediskey.QueueConfigEvents, showID).Err(); err != nil {
		return fmt.Errorf("admission: announce settings: %w", err)
	}
	return nil
}

// Release ends an admission: the grant's active slot is freed for the next fan and its token id is revoked until
// it would have expired anyway. Booking calls it when the admitted fan's booking is confirmed or cancelled; an
// operator's kick does the same. Both keys share the show's hash tag, so one MULTI suffices on a cluster.
func Release(ctx context.Context, rdb redis.Cmdable, showID, jti string, exp time.Time) error {
	if jti == "" {
		return nil
	}
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, rediskey.QueueActive(showID), jti)
		p.ZAdd(ctx, rediskey.QueueRevoked(showID), redis.Z{Score: float64(exp.UnixMilli()), Member: jti})
		// Trim revocations of tokens that have expired on their own: they are refused by exp already.
		p.ZRemRangeByScore(ctx, rediskey.QueueRevoked(showID), "-inf", strconv.FormatInt(time.Now().UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("admission: release %s: %w", jti, err)
	}
	return nil
}

// Gate decides whether a request for a show may pass the waiting room.
type Gate struct {
	rdb      redis.Cmdable
	verifier *token.Verifier
	ttl      time.Duration

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	enabled bool
	at      time.Time
}

// NewGate returns a gate verifying tokens against keys. Whether a show's queue is on is cached for at most a
// second, so an operator's switch reaches every replica within a second without a Redis call per request.
func NewGate(rdb redis.Cmdable, keys token.KeySource, leeway time.Duration) *Gate {
	return &Gate{rdb: rdb, verifier: token.NewVerifier(keys, leeway), ttl: time.Second, cache: map[string]cached{}}
}

// Enabled reports whether showID's queue is on.
func (g *Gate) Enabled(ctx context.Context, showID string) (bool, error) {
	now := time.Now()
	g.mu.Lock()
	c, ok := g.cache[showID]
	g.mu.Unlock()
	if ok && now.Sub(c.at) < g.ttl {
		return c.enabled, nil
	}
	v, err := g.rdb.HGet(ctx, rediskey.QueueConfig(showID), rediskey.QueueEnabled).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("admission: queue state: %w", err)
	}
	enabled := v == "1"
	g.mu.Lock()
	if len(g.cache) > 100000 { // bound memory against requests for made-up show ids
		g.cache = map[string]cached{}
	}
	g.cache[showID] = cached{enabled: enabled, at: now}
	g.mu.Unlock()
	return enabled, nil
}

// Forget drops the cached queue state of a show, for a replica that heard of a settings change.
func (g *Gate) Forget(showID string) {
	g.mu.Lock()
	delete(g.cache, showID)
	g.mu.Unlock()
}

// Check lets a request by userID for showID pass. With the queue off it returns (nil, nil). With it on, raw must
// be a valid, unrevoked admission token for this show and this user; the claims are returned so the caller can
// record the jti. Any refusal wraps ErrRequired.
func (g *Gate) Check(ctx context.Context, showID, userID, raw string) (*token.Admission, error) {
	on, err := g.Enabled(ctx, showID)
	if err != nil || !on {
		return nil, err
	}
	if raw == "" {
		return nil, ErrRequired
	}
	claims, err := g.verifier.Verify(raw, showID, userID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRequired, err)
	}
	_, err = g.rdb.ZScore(ctx, rediskey.QueueRevoked(showID), claims.ID).Result()
	switch {
	case err == nil:
		return nil, fmt.Errorf("%w: %w", ErrRequired, token.ErrRevoked)
	case !errors.Is(err, redis.Nil):
		return nil, fmt.Errorf("admission: revocation: %w", err)
	}
	return claims, nil
}
