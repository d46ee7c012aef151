package booking

import (
	"context"
	"sync"
	"sync/atomic"
)

// Show returns a show, from a cache: a show's definition changes only by an operator (sale opening, close),
// and then every replica drops its copy at once (ShowChanged).
func (s *Catalog) Show(ctx context.Context, id string) (Show, error) {
	if sh, ok := s.cache.shows.Load(id); ok {
		return sh.(Show), nil
	}
	sh, err := s.store.Show(ctx, id)
	if err != nil {
		return Show{}, err
	}
	s.cache.store(&s.cache.shows, id, sh)
	return sh, nil
}

// Layout returns the seats of a show with prices, in map order, from a cache.
func (s *Catalog) Layout(ctx context.Context, showID string) ([]Seat, error) {
	l, _, err := s.layoutIndex(ctx, showID)
	return l, err
}

// layoutIndex returns the show's layout and its seats' positions in it, from a cache.
func (s *Catalog) layoutIndex(ctx context.Context, showID string) ([]Seat, map[string]int, error) {
	if e, ok := s.cache.layouts.Load(showID); ok {
		l := e.(*layoutEntry)
		return l.seats, l.index, nil
	}
	if _, err := s.Show(ctx, showID); err != nil {
		return nil, nil, err
	}
	seats, err := s.store.Layout(ctx, showID)
	if err != nil {
		return nil, nil, err
	}
	idx := make(map[string]int, len(seats))
	for i, st := range seats {
		idx[st.ID] = i
	}
	s.cache.store(&s.cache.layouts, showID, &layoutEntry{seats: seats, index: idx})
	return seats, idx, nil
}

// catalogCache keeps shows and layouts, which never change once created. Every hold reads both, so they sit
// in sync.Maps, read without a lock: a mutex here was one cache line bounced between all CPUs per request.
type catalogCache struct {
	shows   sync.Map // show id -> Show
	layouts sync.Map // show id -> *layoutEntry
	n       atomic.Int64
}

type layoutEntry struct {
	seats []Seat
	index map[string]int // seat id -> position in seats
}

// store caches v. Only what the store returned is cached (unknown ids never are), and the whole cache is
// dropped after 20,000 stores, which bounds it without bookkeeping on the read path.
func (c *catalogCache) store(m *sync.Map, key string, v any) {
	if c.n.Add(1) > 20000 {
		c.n.Store(0)
		c.shows.Clear()
		c.layouts.Clear()
	}
	m.Store(key, v)
}
