package waitroom

import (
	"context"
	"math/rand/v2"
	"time"
)

// Heartbeats: how the waiting room knows a fan in line is still there. admit.lua skips a fan whose heartbeat is
// older than the grace period when their turn comes, so a heartbeat must be rewritten well within the grace, and
// no more often than that: every write is Redis work per waiting fan, the one cost that grows with the crowd
// rather than with the admission rate. A join writes the fan's first heartbeat; after it, each replica rewrites
// the heartbeats of the fans streaming from it once every heartbeatRefresh (Options.HeartbeatRefresh), spread
// over the flushes so that a crowd that connected in one second is not rewritten all in one flush, and the fans
// who polled since the last flush (a poll is a heartbeat) at the next flush.

// heartbeatRefresh is how often a streaming fan's heartbeat is rewritten: a quarter of the grace, so that a live
// fan's heartbeat is never older than a quarter of the grace plus a flush when their turn comes, and never more
// often than the flush itself.
func heartbeatRefresh(o Options) time.Duration {
	if o.HeartbeatRefresh > 0 {
		return max(o.HeartbeatRefresh, o.HeartbeatEvery)
	}
	return max(o.Grace/4, o.HeartbeatEvery)
}

// Due lists the fans streaming show from this replica whose heartbeat is due at now, and schedules each next one
// every later. A new stream's fan has just joined (its heartbeat is fresh): its first refresh comes at a random
// moment within every.
//
// While the show's queue is in a rebuild's gap (its last tick said so: Redis lost the queue and it was rebuilt
// from the record), every stream is due at every flush, as if every were the flush: the flush is how this
// replica learns which of its fans the rebuilt queue lacks and puts them back at their tickets, and each
// flush's delay lets the cursor pass fans who would then go to the back of the line.
func (h *Hub) Due(show string, now time.Time, every time.Duration) []string {
	hs := h.show(show)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	at := int64(now.Sub(hs.epoch))
	rebuilding := hs.haveSnap && hs.snap.Rebuilding()
	out := make([]string, 0, len(hs.watchers)/4+1)
	for w := range hs.watchers {
		switch {
		case w.beatAt == 0 && !rebuilding:
			w.beatAt = at + rand.Int64N(int64(every)+1)
		case w.beatAt <= at || rebuilding:
			w.beatAt = at + int64(every)
			out = append(out, w.User)
		}
	}
	return dedupe(out)
}

// beatAgain makes the heartbeats of users' local streams due at the next flush: their rewrite failed.
func (h *Hub) beatAgain(show string, users []string) {
	want := setOf(users)
	hs := h.show(show)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for w := range hs.watchers {
		if want[w.User] {
			w.beatAt = 1
		}
	}
}

// flushHeartbeats rewrites the heartbeats that are due (Due) and those of the fans who polled since the last
// flush, show by show, and puts back in line the streaming fans the store turns out to have lost.
func (s *Service) flushHeartbeats(ctx context.Context) {
	s.mu.Lock()
	polled := s.polled
	s.polled = map[string]map[string]struct{}{}
	s.mu.Unlock()
	shows := map[string]bool{}
	for show := range polled {
		shows[show] = true
	}
	for _, show := range s.Hub.Shows() {
		shows[show] = true
	}
	every := heartbeatRefresh(s.opt)
	now := time.Now()
	for show := range shows {
		streams := s.Hub.Due(show, now, every)
		users := streams
		for u := range polled[show] {
			users = append(users, u)
		}
		if len(users) == 0 {
			continue
		}
		missing, err := s.store.Touch(ctx, show, dedupe(users))
		if err != nil {
			s.Hub.beatAgain(show, streams)
			if ctx.Err() == nil {
				s.logFailure("heartbeat", show, err)
			}
			continue
		}
		// A fan streaming from here with a ticket and no grant is waiting in line; missing from the queue, the
		// store lost it (a Redis restarted empty, restored from the record without the fans). The stream stays
		// open, so the fan will not come back with its receipt: put it back at the ticket it holds, which its
		// receipt proves and this replica was told by the store.
		if tickets := s.Hub.waiting(show, missing); len(tickets) > 0 {
			if err := s.rejoinAt(ctx, show, tickets); err != nil && ctx.Err() == nil {
				s.logFailure("restore streams", show, err)
			}
		}
	}
}
