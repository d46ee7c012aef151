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

// PreJoiners implements waitroom.Store, scanning so a million members do not make one huge reply.
func (s *Store) PreJoiners(ctx context.Context, show string) ([]string, error) {
	if s.replicas != nil {
		if err := s.replicas.settle(ctx, show); err != nil { // the pool a promoted replica would draw (replicas.go)
			return nil, storeErr("pre-joiners", err)
		}
	}
	var out []string
	it := s.rdb.SScan(ctx, Pre(show), 0, "", 10000).Iterator()
	for it.Next(ctx) {
		out = append(out, it.Val())
	}
	if err := it.Err(); err != nil {
		return nil, storeErr("pre-joiners", err)
	}
	return out, nil
}

// placeChunk is the tickets written per place.lua call: small enough for one unpack() in Lua (at most ~8,000
// values) and for a short script, large enough that a million tickets take few round trips.
const placeChunk = 3000

// Place implements waitroom.Store: chunks of placeChunk tickets, sent ten scripts per round trip (each script is
// atomic and checks the drawn mark itself), then the finishing mark.
func (s *Store) Place(ctx context.Context, show string, ordered []string, digest string) error {
	keys := []string{State(show), Wait(show), Pre(show)}
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
	if err := placeScript.Run(ctx, s.rdb, keys, "finish", len(ordered), digest).Err(); err != nil {
		return storeErr("place", err)
	}
	if s.replicas != nil {
		if err := s.replicas.settle(ctx, show); err != nil { // done once the replicas hold it (replicas.go)
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
