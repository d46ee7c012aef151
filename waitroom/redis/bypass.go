package redis

import (
	"context"
	_ "embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed bypass.lua
	bypassLua    string
	bypassScript = goredis.NewScript(bypassLua)
)

// Bypass implements waitroom.Store (bypass.lua).
func (s *Store) Bypass(ctx context.Context, show, user string, g *waitroom.Grant) (waitroom.Entry, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return waitroom.Entry{}, err
	}
	home := show
	show, p, err := s.lineOf(ctx, show, user, k) // a partitioned queue's fan is admitted on their line
	if err != nil {
		return waitroom.Entry{}, err
	}
	keys := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show), GrantExp(show), JTI(show)}
	args := []any{user, "look", "", 0, 0, ""}
	if g != nil {
		args = []any{user, "admit", g.JTI, g.ExpiresAt.UnixMilli(), g.IssuedAt.UnixMilli(), g.Token}
	}
	r, err := bypassScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && k > 1 && len(r) > 0 && str(r[0]) == "unknown" {
		if err = s.syncLine(ctx, home, show); err == nil {
			r, err = bypassScript.Run(ctx, s.rdb, keys, args...).Slice()
		}
	}
	if err != nil {
		return waitroom.Entry{}, storeErr("bypass", err)
	}
	e, err := s.entry(ctx, "bypass", show, user, r)
	if err != nil || k <= 1 {
		return e, lineErr(show, err)
	}
	return s.inLines(ctx, home, k, p, e)
}
