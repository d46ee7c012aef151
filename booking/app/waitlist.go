package app

import (
	"time"

	"github.com/flashseat/flashseat/shared/infra/env"
)

// WaitlistSettings is the waitlist's part of Config.
type WaitlistSettings struct {
	OfferTTL   time.Duration // WAITLIST_OFFER_TTL: how long an offer's hold lasts; default 15m
	PassLimit  int           // WAITLIST_PASS_LIMIT: times a group may be passed over by smaller ones; default 3
	SweepEvery time.Duration // WAITLIST_SWEEP_INTERVAL: the safety sweep's period; default 30s
}

func loadWaitlistSettings(r *env.Reader) WaitlistSettings {
	c := WaitlistSettings{
		OfferTTL:   r.PositiveDuration("WAITLIST_OFFER_TTL", 15*time.Minute),
		PassLimit:  r.IntIn("WAITLIST_PASS_LIMIT", 3, 1, 1000),
		SweepEvery: r.PositiveDuration("WAITLIST_SWEEP_INTERVAL", 30*time.Second),
	}
	if c.OfferTTL < time.Second {
		r.Fail("WAITLIST_OFFER_TTL: want at least 1s, got %s", c.OfferTTL)
	}
	return c
}
