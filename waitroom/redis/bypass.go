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
	keys := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show), GrantExp(show), JTI(show)}
	args := []any{user, "look", "", 0, 0, ""}
	if g != nil {
		args = []any{user, "admit", g.JTI, g.ExpiresAt.UnixMilli(), g.IssuedAt.UnixMilli(), g.Token}
	}
	r, err := bypassScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return waitroom.Entry{}, storeErr("bypass", err)
	}
	return s.entry(ctx, "bypass", show, user, r)
}
