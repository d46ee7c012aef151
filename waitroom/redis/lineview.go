package redis

// What a replica knows of a partitioned queue's lines between its ticks (lines.go).

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// viewFresh is how old a view may be when a join answers from it: other lines' fans who joined since are not
// counted ahead (they came within the order's bound of this fan, and a stream's next tick counts them).
const viewFresh = 50 * time.Millisecond

// refreshView reads every line's cursor, last ticket and new marks into the view when it is older than
// viewFresh (a replica that streams the show steps its lines at every tick, which keeps it fresh): one pipeline,
// a read on each line. One refresh at a time per view; a join that finds one under way uses the view as it is.
func (s *Store) refreshView(ctx context.Context, show string, v *lineView) error {
	v.mu.Lock()
	if time.Since(v.at) < viewFresh || v.refreshing {
		v.mu.Unlock()
		return nil
	}
	v.refreshing = true
	from := v.lastMarks()
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.refreshing = false
		v.mu.Unlock()
	}()
	states := make([]*goredis.SliceCmd, v.k)
	marks := make([]*goredis.ZSliceCmd, v.k)
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for q := range states {
			line := rediskey.Line(show, q, v.k)
			states[q] = p.HMGet(ctx, State(line), "cursor", "lastSeq")
			marks[q] = p.ZRangeByScoreWithScores(ctx, Marks(line), &goredis.ZRangeBy{
				Min: "(" + strconv.FormatInt(from[q], 10), Max: "+inf"})
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return storeErr("lines", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	next := append(waitroom.Lines(nil), v.lines...)
	for q := range next {
		vals := states[q].Val()
		if len(vals) == 2 {
			next[q].Cursor = max(next[q].Cursor, num(vals[0]))
			next[q].LastSeq = max(next[q].LastSeq, num(vals[1]))
		}
		next[q].Marks = withMarks(next[q].Marks, zmarks(marks[q].Val()), next[q].Cursor)
	}
	withLanes(next, s.lanesOf(show, v.k))
	v.lines, v.at = next, time.Now()
	return nil
}

// zmarks reads marks from their sorted set's members (time) and scores (ticket).
func zmarks(zs []goredis.Z) []waitroom.Mark {
	out := make([]waitroom.Mark, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		out = append(out, waitroom.Mark{Seq: int64(z.Score), At: num(m)})
	}
	return out
}

// withMarks is marks with the newer ones added and those behind the cursor dropped, but the floor mark of the
// next ticket. It shares marks' array, which only ever grows at its end: older views keep reading their part.
func withMarks(marks, newer []waitroom.Mark, cursor int64) []waitroom.Mark {
	for _, m := range newer {
		if len(marks) == 0 || m.Seq > marks[len(marks)-1].Seq {
			marks = append(marks, m)
		}
	}
	i := 0
	for i+1 < len(marks) && marks[i+1].Seq <= cursor+1 {
		i++
	}
	return marks[i:len(marks):len(marks)]
}
