package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed place.lua
	placeLua    string
	placeScript = goredis.NewScript(placeLua)
)

// Seed implements waitroom.Store: SETNX makes the first seed the only one.
func (s *Store) Seed(ctx context.Context, show, fresh string) (string, error) {
	if fresh != "" {
		if err := s.rdb.SetNX(ctx, Seed(show), fresh, 0).Err(); err != nil {
			return "", storeErr("seed", err)
		}
	}
	v, err := s.rdb.Get(ctx, Seed(show)).Result()
	if err != nil {
		return "", storeErr("seed", err)
	}
	return v, nil
}

// DrawLock implements waitroom.Store.
func (s *Store) DrawLock(ctx context.Context, show string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, DrawLock(show), "1", ttl).Result()
	if err != nil {
		return false, storeErr("draw lock", err)
	}
	return ok, nil
}

// DrawUnlock implements waitroom.Store.
func (s *Store) DrawUnlock(ctx context.Context, show string) error {
	if err := s.rdb.Del(ctx, DrawLock(show)).Err(); err != nil {
		return storeErr("draw unlock", err)
	}
	return nil
}

// PreJoiners implements waitroom.Store, scanning so a million members do not make one huge reply: every line's
// pool, for a partitioned queue's one draw.
func (s *Store) PreJoiners(ctx context.Context, show string) ([]string, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range rediskey.Lines(show, k) {
		if s.replicas != nil {
			if err := s.replicas.settle(ctx, line); err != nil { // the pool a promoted replica would draw (replicas.go)
				return nil, storeErr("pre-joiners", err)
			}
		}
		it := s.rdb.SScan(ctx, Pre(line), 0, "", 10000).Iterator()
		for it.Next(ctx) {
			out = append(out, it.Val())
		}
		if err := it.Err(); err != nil {
			return nil, storeErr("pre-joiners", err)
		}
	}
	return out, nil
}

// placeChunk is the tickets written per place.lua call: small enough for one unpack() in Lua (at most ~8,000
// values) and for a short script, large enough that a million tickets take few round trips.
const placeChunk = 3000

// Place implements waitroom.Store. A partitioned queue's draw is one order over all lines: each line gets its
// fans in that order, and marks (waitroom.DrawGroup) that keep the order across lines (placeLine).
func (s *Store) Place(ctx context.Context, show string, ordered []string, digest string) error {
	k, err := s.parts(ctx, show)
	if err != nil {
		return err
	}
	if k <= 1 {
		return s.placeLine(ctx, show, ordered, nil, len(ordered), digest)
	}
	// Each fan on their line, their lane's when the show has lanes (one pipeline for all the draw's fans).
	at := make(map[string]int, len(ordered))
	byLine, err := s.linesOf(ctx, show, k, ordered)
	if err != nil {
		return err
	}
	for p, us := range byLine {
		for _, u := range us {
			at[u] = p
		}
	}
	fans := map[int][]string{}
	groups := map[int][]int64{}
	for i, u := range ordered {
		p := at[u]
		fans[p] = append(fans[p], u)
		groups[p] = append(groups[p], int64(i/waitroom.DrawGroup)+1)
	}
	for p := k - 1; p >= 0; p-- { // the show's own line last: its finish says the whole draw is written
		if err := s.placeLine(ctx, rediskey.Line(show, p, k), fans[p], groups[p], len(ordered), digest); err != nil {
			return err
		}
	}
	return nil
}

// placeLine writes one line's drawn fans as its next tickets, in chunks of placeChunk tickets sent ten scripts
// per round trip (each script is atomic and checks the drawn mark itself), then the finishing mark with the
// whole draw's count. groups, for a partitioned queue, is each fan's group in the show's draw: a mark is written
// at the line's first ticket of each group, before the finish.
func (s *Store) placeLine(ctx context.Context, line string, ordered []string, groups []int64, count int, digest string) error {
	keys := []string{State(line), Wait(line), Pre(line)}
	if len(groups) > 0 {
		last, err := s.rdb.HGet(ctx, State(line), "lastSeq").Int64()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return storeErr("place", err)
		}
		var marks []goredis.Z
		for i, g := range groups {
			if i == 0 || g != groups[i-1] {
				marks = append(marks, goredis.Z{Score: float64(last + int64(i) + 1), Member: g})
			}
		}
		for len(marks) > 0 {
			n := min(len(marks), placeChunk)
			if err := s.rdb.ZAdd(ctx, Marks(line), marks[:n]...).Err(); err != nil {
				return storeErr("place", err)
			}
			marks = marks[n:]
		}
	}
	for i := 0; i < len(ordered); {
		p := s.rdb.Pipeline()
		var cmds []*goredis.Cmd
		for k := 0; k < 10 && i < len(ordered); k++ {
			end := min(i+placeChunk, len(ordered))
			args := make([]any, 0, end-i+2)
			args = append(args, "chunk", i+1)
			for _, u := range ordered[i:end] {
				args = append(args, u)
			}
			cmds = append(cmds, placeScript.Eval(ctx, p, keys, args...))
			i = end
		}
		// EVAL, not EVALSHA, inside a pipeline: a NOSCRIPT reply could not be retried per command.
		if _, err := p.Exec(ctx); err != nil {
			return storeErr("place", err)
		}
		for _, c := range cmds {
			if n, _ := c.Int(); n == 0 {
				return nil // someone else finished the draw
			}
		}
	}
	if err := placeScript.Run(ctx, s.rdb, keys, "finish", len(ordered), digest, count).Err(); err != nil {
		return storeErr("place", err)
	}
	if s.replicas != nil {
		if err := s.replicas.settle(ctx, line); err != nil { // done once the replicas hold it (replicas.go)
			return storeErr("place", err)
		}
	}
	return nil
}

// Fairness implements waitroom.Store.
func (s *Store) Fairness(ctx context.Context, show string) (waitroom.Fairness, error) {
	p := s.rdb.Pipeline()
	seed := p.Get(ctx, Seed(show))
	st := p.HMGet(ctx, State(show), "drawn", "drawCount", "drawDigest")
	opens := p.HGet(ctx, rediskey.ShowInfo(show), rediskey.InfoSaleStartsAt)
	pool := p.SCard(ctx, Pre(show))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return waitroom.Fairness{}, storeErr("fairness", err)
	}
	var f waitroom.Fairness
	f.Seed = seed.Val()
	c, err := waitroom.Commit(f.Seed)
	if err != nil {
		return f, fmt.Errorf("waitroom/redis: fairness: %w", err)
	}
	f.Commitment = c
	vals := st.Val()
	f.Drawn = len(vals) == 3 && vals[0] == "1"
	if f.Drawn {
		f.Participants = num(vals[1])
		f.ParticipantsSHA256 = str(vals[2])
	} else {
		f.Participants = pool.Val()
	}
	if ms, err := strconv.ParseInt(opens.Val(), 10, 64); err == nil && ms > 0 {
		f.SaleStartsAt = time.UnixMilli(ms).UTC()
	}
	return f, nil
}
