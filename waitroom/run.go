package waitroom

import (
	"context"
	"time"
)

// Run ticks every show this replica has fans of (streams, or joins and polls in the last minute) until ctx
// ends, flushes heartbeats in batches, and reacts at once to settings and availability changes. A replica with no
// fans of a show has nothing to tell anyone about it, and the admission rate does not depend on which replicas
// tick (admit.lua), so no global registry of queues is needed.
func (s *Service) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opt.Tick)
	defer tick.Stop()
	hb := time.NewTicker(s.opt.HeartbeatEvery)
	defer hb.Stop()
	events := s.store.Events(ctx)
	var lastPulse time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case show, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ValidID(show) && s.Hub.Knows(show) {
				if _, err := s.Tick(ctx, show, true); err != nil && ctx.Err() == nil {
					s.logFailure("tick", show, err)
				}
			}
		case <-hb.C:
			s.flushHeartbeats(ctx)
		case now := <-tick.C:
			pulse := now.Sub(lastPulse) >= 500*time.Millisecond // streams refresh at least every 2 s
			if pulse {
				lastPulse = now
			}
			for _, show := range s.Hub.Shows() {
				if _, err := s.Tick(ctx, show, pulse); err != nil && ctx.Err() == nil {
					s.logFailure("tick", show, err)
				}
			}
		}
	}
}

// logFailure logs a background failure at most every 10 s per show and kind: with Redis down, every tick of every
// show fails five times a second, and one line says it.
func (s *Service) logFailure(kind, show string, err error) {
	key := kind + " " + show
	now := time.Now()
	s.mu.Lock()
	last, seen := s.loggedAt.Get(key)
	if !seen || now.Sub(last) >= 10*time.Second {
		s.loggedAt.Add(key, now)
	}
	s.mu.Unlock()
	if seen && now.Sub(last) < 10*time.Second {
		return
	}
	s.log.Error("waitroom: "+kind, "show", show, "err", err)
}
