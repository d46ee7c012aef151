package app

import (
	"fmt"
	"strconv"
	"time"
)

// WaitlistSettings is the waitlist's part of Config.
type WaitlistSettings struct {
	OfferTTL   time.Duration // WAITLIST_OFFER_TTL: how long an offer's hold lasts; default 15m
	PassLimit  int           // WAITLIST_PASS_LIMIT: times a group may be passed over by smaller ones; default 3
	SweepEvery time.Duration // WAITLIST_SWEEP_INTERVAL: the safety sweep's period; default 30s
}

func loadWaitlistSettings(str func(k, def string) string, dur func(k string, def time.Duration) time.Duration) (WaitlistSettings, []error) {
	var errs []error
	c := WaitlistSettings{
		OfferTTL:   dur("WAITLIST_OFFER_TTL", 15*time.Minute),
		PassLimit:  3,
		SweepEvery: dur("WAITLIST_SWEEP_INTERVAL", 30*time.Second),
	}
	if v := str("WAITLIST_PASS_LIMIT", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, fmt.Errorf("WAITLIST_PASS_LIMIT: want an integer in [1, 1000], got %q", v))
		} else {
			c.PassLimit = n
		}
	}
	if c.OfferTTL < time.Second {
		errs = append(errs, fmt.Errorf("WAITLIST_OFFER_TTL: want at least 1s, got %s", c.OfferTTL))
	}
	return c, errs
}
