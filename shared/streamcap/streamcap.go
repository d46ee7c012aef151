// Package streamcap bounds the event streams one process holds open per key: an identity's (a fan's tabs, or a
// script opening thousands) and an address prefix's. The waiting room's queue streams and booking's seat-map
// streams count theirs with it, so both refuse the stream over a cap the same way.
package streamcap

import "sync"

// Caps counts open streams per key. The zero value is ready to use.
type Caps struct {
	mu   sync.Mutex
	open map[string]int
}

// Take counts one more stream of each key, unless one key already has its max (0: no bound), when it counts
// none and reports false. keys and maxes pair up.
func (c *Caps) Take(keys []string, maxes []int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if maxes[i] > 0 && c.open[k] >= maxes[i] {
			return false
		}
	}
	if c.open == nil {
		c.open = map[string]int{}
	}
	for _, k := range keys {
		c.open[k]++
	}
	return true
}

// Give uncounts a stream that Take counted with these keys.
func (c *Caps) Give(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if c.open[k]--; c.open[k] <= 0 {
			delete(c.open, k)
		}
	}
}

// Open is how many streams of key are counted.
func (c *Caps) Open(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[key]
}
