package redis

// A partitioned queue's lines read the show's settings and info from copies on their own slots (lines.go).

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// syncLine copies the show's settings and info to one line; ErrNoSettings when the show has none.
func (s *Store) syncLine(ctx context.Context, show, line string) error {
	cfg, info, err := s.showCopy(ctx, show)
	if err != nil {
		return err
	}
	return s.writeCopies(ctx, []string{line}, cfg, info)
}

// showCopy reads what the lines copy of the show.
func (s *Store) showCopy(ctx context.Context, show string) (cfg, info map[string]string, err error) {
	p := s.rdb.Pipeline()
	c := p.HGetAll(ctx, rediskey.QueueConfig(show))
	i := p.HGetAll(ctx, rediskey.ShowInfo(show))
	if _, err := p.Exec(ctx); err != nil {
		return nil, nil, storeErr("line copy", err)
	}
	if len(c.Val()) == 0 {
		return nil, nil, waitroom.ErrNoSettings
	}
	return c.Val(), i.Val(), nil
}

// writeCopies replaces each line's copies with cfg and info, each in one MULTI on its line's slot.
func (s *Store) writeCopies(ctx context.Context, lines []string, cfg, info map[string]string) error {
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, l := range lines {
			if l == rediskey.ShowOf(l) {
				continue // the show's own
			}
			for key, h := range map[string]map[string]string{rediskey.QueueConfig(l): cfg, rediskey.ShowInfo(l): info} {
				p.Del(ctx, key)
				if len(h) > 0 {
					p.HSet(ctx, key, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		return storeErr("line copy", err)
	}
	return nil
}

// syncLines copies the show's settings and info to every line when they changed since this replica last did, or
// a second later (a line that lost its copies gets them back).
func (s *Store) syncLines(ctx context.Context, show string, v *lineView) error {
	cfg, info, err := s.showCopy(ctx, show)
	if err != nil {
		return err
	}
	sig := fmt.Sprint(cfg, info)
	v.mu.Lock()
	due := sig != v.copied || time.Since(v.copiedAt) >= time.Second
	v.mu.Unlock()
	if !due {
		return nil
	}
	if err := s.writeCopies(ctx, rediskey.Lines(show, v.k), cfg, info); err != nil {
		return err
	}
	v.mu.Lock()
	v.copied, v.copiedAt = sig, time.Now()
	v.mu.Unlock()
	return nil
}
