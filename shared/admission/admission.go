// Package admission is the waiting-room contract edge, waitroom and booking share: a show's queue settings and
// the admissions made, how an admission token and a place receipt travel with a request, and the one check that
// decides whether a request for a show may pass the queue. Edge and booking both run the check (defence in
// depth); the waiting room writes the settings and makes the admissions.
//
// PostgreSQL is the record of the settings and admissions (admission/postgres implements Record); Redis is their
// cache (admission/redis implements Cache), which every hot path reads. The Keeper rebuilds the cache from the
// record whenever it finds it missing, so losing Redis never reads as "queue off" for a show whose record says
// on: while a show's state cannot be read, Settings and Check fail with ErrUnavailable and callers refuse.
package admission

import (
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/store"
)

// Header carries an admission token on API requests.
const Header = "X-Admission-Token"

// CookieName is the cookie the waiting room sets for a show's admission token, for browsers.
func CookieName(showID string) string { return "fs_adm_" + showID }

// PlaceHeader carries a place receipt on a re-join (API clients); browsers send PlaceCookieName.
const PlaceHeader = "X-Place-Receipt"

// PlaceCookieName is the cookie the waiting room sets with a fan's signed place receipt for a show.
func PlaceCookieName(showID string) string { return "fs_place_" + showID }

var (
	// ErrRequired means the show's queue is on and the request has no acceptable admission token. Errors from
	// Check wrap it together with the reason (token.ErrExpired, token.ErrWrongShow, token.ErrRevoked, ...).
	ErrRequired = errors.New("admission: admission token required")
	// ErrUnavailable means a show's queue state can be read neither from the cache nor from the record (Redis or
	// PostgreSQL unreachable, or Redis lost it and it is not rebuilt yet): callers refuse the request rather than
	// guess. It wraps store.ErrUnavailable, so every service's error table answers 503 store-unavailable.
	ErrUnavailable = fmt.Errorf("admission: queue state unavailable: %w", store.ErrUnavailable)
	// ErrUnknownAdmission means no admission with that id (or no live admission of that fan) is on record.
	ErrUnknownAdmission = errors.New("admission: no such admission")
)

// Settings are an operator's settings for a show's waiting room.
type Settings struct {
	// Enabled is Mode != ModeOff (what the contract answers as "enabled"); settle keeps the two in step.
	Enabled bool `json:"enabled"`
	// Mode is ModeOff, ModeAlways or ModeThreshold (mode.go); empty only in DefaultSettings, where the keeper's
	// site-wide default mode applies.
	Mode            string  `json:"mode"`
	AdmitPerSecond  float64 `json:"admitPerSecond"`
	MaxActive       int     `json:"maxActive"`
	TokenTTLSeconds int     `json:"tokenTtlSeconds"`
	// Paused stops admission while the queue stays on: fans keep their places, nobody is admitted.
	Paused bool `json:"paused"`
	// TurnHoldSeconds is how long a fan whose turn came while they were away (a phone asleep, no heartbeat
	// within the grace period) keeps it: coming back within it with their place receipt, they go to the head
	// of the line rather than the back.
	TurnHoldSeconds int `json:"turnHoldSeconds"`
	// Bot is the show's bot protection (bot.go).
	Bot BotProtection `json:"botProtection"`
	// Page is the queue page's message and language (page.go).
	Page Page `json:"page"`
	// Tuning is the threshold mode's limits and autotune (mode.go), answered at the top level of the settings.
	Tuning
}

// DefaultSettings apply to a show whose operator has set nothing: queue off, and bot protection on for when it
// is switched on.
func DefaultSettings() Settings {
	return Settings{Enabled: false, AdmitPerSecond: 10, MaxActive: 200, TokenTTLSeconds: 600,
		TurnHoldSeconds: 600, Bot: DefaultBotProtection(), Page: DefaultPage(), Tuning: DefaultTuning()}
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
	case s.TurnHoldSeconds < 0 || s.TurnHoldSeconds > 86400:
		return errors.New("turnHoldSeconds must be in [0, 86400]")
	case s.Mode != "" && !ValidMode(s.Mode):
		return fmt.Errorf("mode must be %q, %q or %q", ModeOff, ModeAlways, ModeThreshold)
	case s.Mode != "" && (s.Mode != ModeOff) != s.Enabled:
		return fmt.Errorf("enabled: %t contradicts mode %q", s.Enabled, s.Mode)
	case s.Partitions > 1 && s.Mode == ModeThreshold:
		// Threshold mode admits at once while the line is empty and engages on the show's totals, which one
		// partition's join cannot read: a partitioned queue is always on.
		return fmt.Errorf("partitions: %d needs mode %q, not %q", s.Partitions, ModeAlways, ModeThreshold)
	case s.Lanes.Count() > 1 && s.Mode == ModeThreshold:
		// Lanes are lines of their own (lane.go): the same holds.
		return fmt.Errorf("lanes: lanes need mode %q, not %q", ModeAlways, ModeThreshold)
	}
	if err := s.Tuning.Validate(); err != nil {
		return err
	}
	if err := s.Page.Validate(); err != nil {
		return err
	}
	return s.Bot.Validate()
}

// Grant is one admission as recorded: who was admitted to which show, under which token id, until when.
type Grant struct {
	ShowID    string    `json:"showId"`
	JTI       string    `json:"jti"`
	UserID    string    `json:"userId"`
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}
