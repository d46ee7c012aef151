package redis

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed join.lua
	joinLua    string
	joinScript = goredis.NewScript(joinLua)
)

// joinKeys returns join.lua's keys for show, shared by every call: callers must not change them. A lookup only
// reads the cache (Peek, under its read lock): every join and status call asks, and moving the show to the front
// would take the exclusive lock each time, for the few shows on sale at once.
func (s *Store) joinKeys(show string) []string {
	if k, ok := s.keys.Peek(show); ok {
		return k
	}
	k := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show)}
	s.keys.Add(show, k)
	return k
}

// Join implements waitroom.Store.
func (s *Store) Join(ctx context.Context, show, user string, receipted int64) (waitroom.Entry, error) {
	return s.join(ctx, show, user, true, receipted)
}

// Lookup implements waitroom.Store.
func (s *Store) Lookup(ctx context.Context, show, user string) (waitroom.Entry, error) {
	return s.join(ctx, show, user, false, 0)
}

func (s *Store) join(ctx context.Context, show, user string, join bool, receipted int64) (waitroom.Entry, error) {
	var flag any = "0" // constants in an interface: no allocation per call
	if join {
		flag = "1"
	}
	if err := ctx.Err(); err != nil {
		return waitroom.Entry{}, storeErr("join", err)
	}
	r, err := joinScript.Run(ctx, s.joins, s.joinKeys(show), user, flag, receipted).Slice()
	if err != nil {
		return waitroom.Entry{}, storeErr("join", err)
	}
	e := waitroom.Entry{Found: true}
	kind, _ := r[0].(string)
	switch kind {
	case "unknown":
		return e, waitroom.ErrNoSettings
	case "restore":
		return e, waitroom.ErrNoState
	case "reserve":
		return e, &waitroom.SeqsError{LastSeq: num(r[1])}
	case "closed":
		ok, err := s.Exists(ctx, show)
		if err != nil {
			return e, err
		}
		if !ok {
			return e, waitroom.ErrUnknownShow
		}
		e.Status = waitroom.Closed
	case "sold_out":
		e.Status = waitroom.SoldOut
	case "admitted":
		g, err := parseGrant(user, str(r[1]))
		if err != nil {
			return e, err
		}
		e.Status, e.Grant = waitroom.Admitted, &g
	case "pre", "pending":
		e.Status, e.Pre, e.Pending = waitroom.Waiting, kind == "pre", kind == "pending"
		e.OpensAt = time.UnixMilli(num(r[1]))
		e.Paused = len(r) > 2 && str(r[2]) == "1"
	case "waiting":
		e.Status, e.Seq, e.Cursor = waitroom.Waiting, num(r[1]), num(r[2])
		if len(r) > 4 {
			e.AdmitPerSecond, _ = strconv.ParseFloat(str(r[3]), 64)
			e.Paused = str(r[4]) == "1"
		}
	case "none":
		e.Found = false
	default:
		return e, fmt.Errorf("waitroom/redis: join: unexpected reply %v", r)
	}
	return e, nil
}
