package booking

import (
	"context"
	"math/rand/v2"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Show returns a show, from a cache: a show's definition changes only by an operator (sale opening, close),
// and then every replica drops its copy at once (ShowChanged).
func (s *Catalog) Show(ctx context.Context, id string) (Show, error) {
	sh, err := s.cachedShow(ctx, id)
	if err != nil {
		return Show{}, err
	}
	return *sh, nil
}

// cachedShow is Show without the copy: the cached definition itself, which nobody may change (a changed show is
// stored anew). A hold reads a few of its fields, and copying all of them showed in its profile.
func (s *Catalog) cachedShow(ctx context.Context, id string) (*Show, error) {
	if sh, ok := s.cache.shows.Load(id); ok {
		s.cache.touch(id)
		return sh.(*Show), nil
	}
	sh, err := s.store.Show(ctx, id)
	if err != nil {
		return nil, err
	}
	s.cache.store(&s.cache.shows, id, &sh)
	return &sh, nil
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
//
// The maps are bounded by an LRU of show ids (golang-lru), which when full forgets the show least recently used,
// never every show at once: dropping the whole cache in the middle of a sale sent every hold of every show to
// PostgreSQL together. Reads touch the LRU only one time in touchEvery, so the hot path stays lock-free while a
// show in use still counts as recently used.
type catalogCache struct {
	shows   sync.Map // show id -> *Show, never changed once stored
	layouts sync.Map // show id -> *layoutEntry

	mu    sync.Mutex                   // serializes changes to the maps with the LRU's, so the two agree
	order *lru.Cache[string, struct{}] // the show ids in the maps; nil until the first store
}

const (
	catalogCacheSize = 10000 // shows; each with its layout
	touchEvery       = 64
)

type layoutEntry struct {
	seats []Seat
	index map[string]int // seat id -> position in seats
}

// store caches v under key in m (shows or layouts). Only what the store returned is cached (unknown ids never
// are).
func (c *catalogCache) store(m *sync.Map, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order == nil {
		c.order, _ = lru.NewWithEvict(catalogCacheSize, func(id string, _ struct{}) { // errs only for size < 1
			c.shows.Delete(id)
			c.layouts.Delete(id)
		})
	}
	c.order.Add(key, struct{}{}) // may evict another show, under c.mu
	m.Store(key, v)
}

// touch marks a show as used, one read in touchEvery.
func (c *catalogCache) touch(id string) {
	if rand.N(touchEvery) == 0 {
		c.mu.Lock()
		if c.order != nil {
			c.order.Get(id)
		}
		c.mu.Unlock()
	}
}

// forget drops a show's cached definition (its layout never changes).
func (c *catalogCache) forget(id string) {
	c.mu.Lock()
	c.shows.Delete(id)
	c.mu.Unlock()
}
