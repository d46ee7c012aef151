package redis

import (
	"context"
	_ "embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
)

var (
	//go:embed touch.lua
	touchLua    string
	touchScript = goredis.NewScript(touchLua)
)

// Touch implements waitroom.Store, in chunks so no single script runs long.
func (s *Store) Touch(ctx context.Context, show string, users []string) ([]string, error) {
	k, groups, err := s.byLine(ctx, show, users)
	if err != nil {
		return nil, err
	}
	var missing []string
	for p, us := range groups {
		m, err := s.touch(ctx, rediskey.Line(show, p, k), us)
		missing = append(missing, m...)
		if err != nil {
			return missing, err
		}
	}
	return missing, nil
}

// touch refreshes heartbeats on one line.
func (s *Store) touch(ctx context.Context, show string, users []string) ([]string, error) {
	var missing []string
	for len(users) > 0 {
		n := min(len(users), 1000)
		args := make([]any, n)
		for i, u := range users[:n] {
			args[i] = u
		}
		r, err := touchScript.Run(ctx, s.rdb, []string{Heartbeat(show)}, args...).StringSlice()
		if err != nil {
			return missing, storeErr("touch", err)
		}
		missing = append(missing, r...)
		users = users[n:]
	}
	return missing, nil
}
