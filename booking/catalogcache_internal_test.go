package booking

import (
	"fmt"
	"sync"
	"testing"
)

// The catalog cache is bounded: full, it forgets the show least recently used (with its layout), not every show.
func TestCatalogCacheBounded(t *testing.T) {
	t.Parallel()
	var c catalogCache
	for i := range catalogCacheSize {
		id := fmt.Sprintf("s%d", i)
		c.store(&c.shows, id, &Show{ID: id})
		c.store(&c.layouts, id, &layoutEntry{})
	}
	for range 2000 { // a show in use: reads touch it one time in touchEvery
		c.touch("s0")
	}
	c.store(&c.shows, "new", &Show{ID: "new"})

	has := func(m *sync.Map, id string) bool { _, ok := m.Load(id); return ok }
	if !has(&c.shows, "s0") || !has(&c.layouts, "s0") {
		t.Fatal("the show in use was evicted")
	}
	if has(&c.shows, "s1") || has(&c.layouts, "s1") {
		t.Fatal("the least recently used show is still cached")
	}
	if !has(&c.shows, "new") || !has(&c.shows, "s2") || !has(&c.layouts, "s2") {
		t.Fatal("more than one show was evicted")
	}
	n := 0
	c.shows.Range(func(any, any) bool { n++; return true })
	if n != catalogCacheSize {
		t.Fatalf("%d shows cached, bound %d", n, catalogCacheSize)
	}

	c.forget("s2")
	if has(&c.shows, "s2") || !has(&c.layouts, "s2") {
		t.Fatal("forget should drop the show's definition and keep its layout")
	}
}

// Reads and stores race: go test -race.
func TestCatalogCacheConcurrent(t *testing.T) {
	t.Parallel()
	var c catalogCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprintf("s%d", (g*131+i)%50)
				if _, ok := c.shows.Load(id); ok {
					c.touch(id)
				} else {
					c.store(&c.shows, id, &Show{ID: id})
				}
				if i%50 == 0 {
					c.forget(id)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkCatalogCacheRead compares, in one run, a read of a cached show as the hold path does it (a sync.Map
// load, touching the LRU one time in touchEvery) with a bare load, and with a locked LRU read on every hold (the
// design not taken): run it with -cpu 1,2,8 and compare the ratios.
func BenchmarkCatalogCacheRead(b *testing.B) {
	var c catalogCache
	c.store(&c.shows, "s1", &Show{ID: "s1"})
	b.Run("load", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.shows.Load("s1")
			}
		})
	})
	b.Run("load+touch", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok := c.shows.Load("s1"); ok {
					c.touch("s1")
				}
			}
		})
	})
	b.Run("lru-get-every-read", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.order.Get("s1")
			}
		})
	})
}
