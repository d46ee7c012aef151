// Package shard places each show on one of several PostgreSQL databases (DATABASE_SHARDS): a hash ring with
// virtual nodes, so adding a shard moves only the shows that now hash to it (about 1/N of them), and ids that carry
// their show's place, so a booking, payment attempt, payment, ticket or refund found by id alone is looked up on
// the one shard that keeps it. It is a contract: the edge (the queue's record) and booking must place a show
// alike, so it lives in shared/ and knows nothing of any driver.
package shard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// VirtualNodes is how many points each shard has on the ring: enough that two to a few dozen shards share the
// shows within a few per cent of evenly.
const VirtualNodes = 256

// Key is a show's place on the ring, the first four bytes of SHA-256 of its id. Every id made by ID for that show
// carries it, so a lookup by id lands where the show is without knowing the show.
type Key uint32

// KeyOf is showID's place on the ring.
func KeyOf(showID string) Key {
	sum := sha256.Sum256([]byte(showID))
	return Key(binary.BigEndian.Uint32(sum[:4]))
}

// ID returns a fresh random id for a row of showID: prefix, the show's key in 8 hex digits, then 24 random hex
// digits (96 bits), as long as the ids made before shards were (prefix and 32 hex digits).
func ID(prefix, showID string) string {
	var b [16]byte
	binary.BigEndian.PutUint32(b[:4], uint32(KeyOf(showID)))
	_, _ = rand.Read(b[4:])
	return prefix + hex.EncodeToString(b[:])
}

// ErrNoKey is returned for an id that does not carry a show's key (not made by ID).
var ErrNoKey = errors.New("shard: id carries no show key")

// KeyOfID reads the show key an id made by ID carries: the 8 hex digits after the prefix's last underscore.
func KeyOfID(id string) (Key, error) {
	i := strings.LastIndexByte(id, '_')
	rest := id[i+1:]
	if len(rest) < 8 {
		return 0, fmt.Errorf("%w: %q", ErrNoKey, id)
	}
	n, err := strconv.ParseUint(rest[:8], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrNoKey, id)
	}
	return Key(n), nil
}

// Ring maps keys to shards by consistent hashing. The zero Ring is not usable; make one with New.
type Ring struct {
	names  []string
	points []point // sorted by at
}

type point struct {
	at    uint32
	shard int
}

// New builds a ring over the shards named, in the order given (Locate answers an index into names). A shard's
// points depend only on its name, so a shard keeps its shows whatever others are added or removed.
func New(names []string) (*Ring, error) {
	if len(names) == 0 {
		return nil, errors.New("shard: no shards")
	}
	r := &Ring{names: slices.Clone(names)}
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" || seen[n] {
			return nil, fmt.Errorf("shard: shard name %q empty or repeated", n)
		}
		seen[n] = true
		for v := range VirtualNodes {
			sum := sha256.Sum256([]byte(n + "#" + strconv.Itoa(v)))
			r.points = append(r.points, point{at: binary.BigEndian.Uint32(sum[:4]), shard: i})
		}
	}
	slices.SortFunc(r.points, func(a, b point) int {
		if a.at != b.at {
			return cmpU32(a.at, b.at)
		}
		return strings.Compare(r.names[a.shard], r.names[b.shard]) // equal points: the same winner everywhere
	})
	return r, nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Names are the shards' names, in the order New was given them.
func (r *Ring) Names() []string { return slices.Clone(r.names) }

// Len is the number of shards.
func (r *Ring) Len() int { return len(r.names) }

// Locate is the index of the shard that keeps key: the owner of the first point at or after it, clockwise.
func (r *Ring) Locate(k Key) int {
	i, _ := slices.BinarySearchFunc(r.points, uint32(k), func(p point, t uint32) int { return cmpU32(p.at, t) })
	if i == len(r.points) {
		i = 0
	}
	return r.points[i].shard
}

// Of is the index of the shard that keeps showID.
func (r *Ring) Of(showID string) int { return r.Locate(KeyOf(showID)) }
