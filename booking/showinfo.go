package booking

import "context"

// ShowInfo is each show's availability as the waiting room and the catalog pages read it (a hash in Redis, and
// an announcement when it changes). The Catalog rewrites it: at once after an operator's change, and otherwise
// coalesced, at most once per show per InfoCoalesce (the Reconciler's flush), however many holds change it.

// markDirty schedules a ShowInfo rewrite for the show. Rewrites are coalesced: a burst of holds on a hot show
// costs one rewrite per InfoCoalesce, off the hold's critical path.
func (s *Catalog) markDirty(showID string) {
	s.mu.Lock()
	s.dirty[showID] = true
	s.mu.Unlock()
}

// flushInfo rewrites the ShowInfo of the shows marked dirty and adds the refusals counted since the last flush
// to the shows' conflict counters.
func (s *Catalog) flushInfo(ctx context.Context) {
	conflicts := s.seats.takeConflicts()
	s.mu.Lock()
	shows := make([]string, 0, len(s.dirty))
	for id := range s.dirty {
		shows = append(shows, id)
	}
	s.dirty = map[string]bool{}
	s.mu.Unlock()
	for id, n := range conflicts {
		if err := s.locks.AddConflicts(ctx, id, n); err != nil {
			s.log.WarnContext(ctx, "count conflicts", "show", id, "err", err)
		}
	}
	for _, id := range shows {
		if err := s.PublishInfo(ctx, id); err != nil {
			s.log.WarnContext(ctx, "publish show info", "show", id, "err", err)
		}
	}
}

// PublishInfo computes the show's live counts and writes them to ShowInfo.
func (s *Catalog) PublishInfo(ctx context.Context, showID string) error {
	show, err := s.Show(ctx, showID)
	if err != nil {
		return err
	}
	c, err := s.Counts(ctx, showID)
	if err != nil {
		return err
	}
	return s.publishCounts(ctx, show, c)
}

// publishCounts writes c, the show's live counts, to ShowInfo.
func (s *Catalog) publishCounts(ctx context.Context, show Show, c Counts) error {
	// The hash is rewritten every time (it may have been lost); the waiting room is told only of a change.
	s.mu.Lock()
	if s.published == nil {
		s.published = map[string]Counts{}
	}
	last, seen := s.published[show.ID]
	s.published[show.ID] = c
	s.mu.Unlock()
	return s.locks.PublishInfo(ctx, show, c, s.cfg.Now(), !seen || last != c)
}
