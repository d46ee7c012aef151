package redis

import (
	"context"
	_ "embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed restore.lua
	restoreLua    string
	restoreScript = goredis.NewScript(restoreLua)
	//go:embed ceiling.lua
	ceilingLua    string
	ceilingScript = goredis.NewScript(ceilingLua)
)

// Restore implements waitroom.Store (restore.lua): show is a show, or one line of a partitioned show's queue,
// which keeps its own grants of d's (their jtis name it) and holds them among its active admissions (the show's
// own are the admission cache's to restore).
func (s *Store) Restore(ctx context.Context, show string, d waitroom.Durable) error {
	args := []any{d.Cursor, d.Ceiling, flag(d.Drawn), d.DrawCount, d.DrawDigest, d.Seed, d.SaleStartsAt.UnixMilli()}
	if d.SaleStartsAt.IsZero() {
		args[6] = 0
	}
	home := rediskey.ShowOf(show)
	var active []goredis.Z
	for _, g := range d.Grants {
		if rediskey.LineOfJTI(home, g.JTI) != show {
			continue
		}
		args = append(args, g.UserID, g.JTI, g.ExpiresAt.UnixMilli(), g.IssuedAt.UnixMilli())
		active = append(active, goredis.Z{Score: float64(g.ExpiresAt.UnixMilli()), Member: g.JTI})
	}
	keys := []string{State(show), Seed(show), Grants(show), GrantExp(show), JTI(show), rediskey.ShowInfo(show),
		Returned(show)}
	n, err := restoreScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return storeErr("restore", err)
	}
	if n == 1 && show != home && len(active) > 0 {
		if err := s.rdb.ZAdd(ctx, rediskey.QueueActive(show), active...).Err(); err != nil {
			return storeErr("restore", err)
		}
	}
	return nil
}

// SetCeiling implements waitroom.Store (ceiling.lua).
func (s *Store) SetCeiling(ctx context.Context, show string, ceiling int64) error {
	n, err := ceilingScript.Run(ctx, s.rdb, []string{State(show)}, ceiling).Int()
	if err != nil {
		return storeErr("ceiling", err)
	}
	if n < 0 {
		return waitroom.ErrNoState
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
