package rediskey

import (
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

// A show's queue may be split over K partitions (the queue settings' "partitions", 1-64), each a whole queue of
// its own under a hash tag of its own, so that one show's joins, heartbeats and admissions are spread over the
// cluster's masters. Partition 0 is the show itself ({show:ID}, where a single queue has always been); partition p
// is the "line" ID~s, whose suffix s is chosen so the line's slot lies p/K of the slot space past the show's: the
// K slots are then evenly spaced, and a cluster of M masters each holding a contiguous 1/M of the slots serves
// K/M of them each (K a multiple of M), or at most ceil(K/M).
//
// Every key of a line is the show's key function applied to the line's id: Wait(Line(show, 2, 3)) is partition
// 2's queue. The line keeps its own copies of QueueConfig and ShowInfo (the waiting room copies them from the
// show's at each tick) and its own QueueActive, which booking finds from the admission's jti (ActiveFor).

// MaxPartitions is the most partitions a show's queue may have.
const MaxPartitions = 64

// LineSep separates a show's id from its line's suffix. Show ids never hold it.
const LineSep = "~"

// Slot is Redis Cluster's slot of key: CRC16 (XMODEM) of its hash tag when it has one, modulo 16384.
func Slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

type lineKey struct {
	show string
	p, k int
}

var (
	linesMu sync.Mutex
	lines   = map[lineKey]string{}
)

// maxCachedLines bounds the memo of Line: shows on sale at once times their partitions, with room to spare.
const maxCachedLines = 1 << 16

// Line is the id of partition p (0 <= p < k) of show's queue: the show itself for p = 0, else show~s with the
// first suffix s whose slot is within a few slots of p/k of the way round from the show's. The search costs about
// a thousand CRCs, so answers are remembered.
func Line(show string, p, k int) string {
	if p <= 0 || k <= 1 {
		return show
	}
	key := lineKey{show, p, k}
	linesMu.Lock()
	id, ok := lines[key]
	linesMu.Unlock()
	if ok {
		return id
	}
	home := int(Slot(Tag(show)))
	target := (home + p*16384/k) % 16384
	best, bestDist := "", 1<<30
	for i := 0; i < 1<<20 && bestDist > 4; i++ {
		s := strconv.FormatInt(int64(p), 10) + "." + strconv.FormatInt(int64(i), 36)
		d := int(Slot(Tag(show+LineSep+s))) - target
		if d < 0 {
			d = -d
		}
		if d > 8192 {
			d = 16384 - d
		}
		if d < bestDist {
			best, bestDist = s, d
		}
	}
	id = show + LineSep + best
	linesMu.Lock()
	if len(lines) >= maxCachedLines {
		clear(lines)
	}
	lines[key] = id
	linesMu.Unlock()
	return id
}

// Lines lists the ids of a show's k partitions, partition 0 (the show) first.
func Lines(show string, k int) []string {
	out := make([]string, max(k, 1))
	for p := range out {
		out[p] = Line(show, p, k)
	}
	return out
}

// ShowOf is the show a line id belongs to (the id itself for a show).
func ShowOf(line string) string {
	if i := strings.Index(line, LineSep); i >= 0 {
		return line[:i]
	}
	return line
}

// PartitionOf is the partition of a fan's queue among k: a jump consistent hash of the fan's id, so every replica
// puts a fan in the same partition and the fans spread evenly.
func PartitionOf(user string, k int) int {
	if k <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(user))
	key := h.Sum64()
	// Lamping and Veach's jump consistent hash.
	var b, j int64 = -1, 0
	for j < int64(k) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// JTIPrefix is what a line's admissions' token ids start with, so that whoever holds only the jti (booking,
// releasing an admission) finds the line's QueueActive: "" for a show's own queue.
func JTIPrefix(line string) string {
	if i := strings.Index(line, LineSep); i >= 0 {
		return line[i:] + "."
	}
	return ""
}

// LineOfJTI is the line of show that issued the admission jti (JTIPrefix): the show itself for its own.
func LineOfJTI(show, jti string) string {
	if strings.HasPrefix(jti, LineSep) {
		if i := strings.IndexByte(jti, '.'); i > 0 {
			if j := strings.IndexByte(jti[i+1:], '.'); j > 0 {
				return show + jti[:i+1+j]
			}
		}
	}
	return show
}

// ActiveFor is the QueueActive holding the admission jti of show: the line's, for a jti a line issued.
func ActiveFor(show, jti string) string { return QueueActive(LineOfJTI(show, jti)) }
