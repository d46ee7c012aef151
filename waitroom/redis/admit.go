package redis

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed admit.lua
	admitLua    string
	admitScript = goredis.NewScript(arrivalsLua + admitLua)
	//go:embed tokens.lua
	tokensLua    string
	tokensScript = goredis.NewScript(tokensLua)
)

// parseGrant reads "jti|expMs|iatMs[|token]".
func parseGrant(user, v string) (waitroom.Grant, error) {
	parts := strings.SplitN(v, "|", 4)
	if len(parts) < 3 {
		return waitroom.Grant{}, fmt.Errorf("waitroom/redis: malformed grant %q", v)
	}
	exp, err1 := strconv.ParseInt(parts[1], 10, 64)
	iat, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return waitroom.Grant{}, fmt.Errorf("waitroom/redis: malformed grant %q", v)
	}
	g := waitroom.Grant{UserID: user, JTI: parts[0], ExpiresAt: time.UnixMilli(exp), IssuedAt: time.UnixMilli(iat)}
	if len(parts) == 4 {
		g.Token = parts[3]
	}
	return g, nil
}

// overdueAfter is how long a grant may stay unrecorded before a tick hands it out again for recording: well past
// the few milliseconds its own tick takes to record it, so only a grant whose admitter died or failed is retried.
const overdueAfter = 2 * time.Second

// Admit implements waitroom.Store.
func (s *Store) Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (waitroom.TickResult, error) {
	keys := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show), GrantExp(show), JTI(show), Unrecorded(show),
		Skipped(show), BotStats(show)}
	r, err := admitScript.Run(ctx, s.rdb, keys, nonce, grace.Milliseconds(), maxScan, overdueAfter.Milliseconds()).Slice()
	if err != nil {
		return waitroom.TickResult{}, storeErr("admit", err)
	}
	if len(r) == 1 {
		switch str(r[0]) {
		case "unknown":
			return waitroom.TickResult{}, waitroom.ErrNoSettings
		case "restore":
			return waitroom.TickResult{}, waitroom.ErrNoState
		}
	}
	if len(r) < 18 {
		return waitroom.TickResult{}, fmt.Errorf("waitroom/redis: admit: short reply %v", r)
	}
	rate, _ := strconv.ParseFloat(str(r[9]), 64)
	snap := waitroom.TickResult{
		Show: show, Phase: waitroom.Phase(str(r[0])), Cursor: num(r[1]), LastSeq: num(r[2]), Waiting: num(r[3]),
		Active: num(r[4]), AdmittedTotal: num(r[5]), SkippedTotal: num(r[6]), At: time.UnixMilli(num(r[7])),
		AdmitPerSecond: rate, MaxActive: num(r[10]), DurableCursor: num(r[12]), Engaged: num(r[14]) == 1,
		ArrivalsPerMinute: num(r[15]), Gap: waitroom.Gap{End: num(r[16]), Empty: num(r[17])},
	}
	if o := num(r[8]); o > 0 {
		snap.OpensAt = time.UnixMilli(o)
	}
	out, _ := r[11].([]any)
	if len(out) >= 2 {
		iat, exp := time.UnixMilli(num(out[len(out)-2])), time.UnixMilli(num(out[len(out)-1]))
		for i := 0; i+1 < len(out)-2; i += 2 {
			snap.Grants = append(snap.Grants, waitroom.Grant{UserID: str(out[i]), JTI: str(out[i+1]),
				IssuedAt: iat, ExpiresAt: exp})
		}
	}
	overdue, _ := r[13].([]any)
	for i := 0; i+3 < len(overdue); i += 4 {
		snap.Overdue = append(snap.Overdue, waitroom.Grant{UserID: str(overdue[i]), JTI: str(overdue[i+1]),
			ExpiresAt: time.UnixMilli(num(overdue[i+2])), IssuedAt: time.UnixMilli(num(overdue[i+3]))})
	}
	return snap, nil
}

// SaveTokens implements waitroom.Store (tokens.lua).
func (s *Store) SaveTokens(ctx context.Context, show string, grants []waitroom.Grant) (int64, error) {
	args := make([]any, 0, 3*len(grants))
	for _, g := range grants {
		args = append(args, g.UserID, g.JTI, g.Token)
	}
	if len(args) == 0 {
		return 0, nil
	}
	durable, err := tokensScript.Run(ctx, s.rdb, []string{Grants(show), Unrecorded(show), State(show)}, args...).Int64()
	if err != nil {
		return 0, storeErr("save tokens", err)
	}
	return durable, nil
}

// Grants implements waitroom.Store: live grants only.
func (s *Store) Grants(ctx context.Context, show string, users []string) (map[string]waitroom.Grant, error) {
	out := map[string]waitroom.Grant{}
	if len(users) == 0 {
		return out, nil
	}
	vals, err := s.rdb.HMGet(ctx, Grants(show), users...).Result()
	if err != nil {
		return nil, storeErr("grants", err)
	}
	now := time.Now()
	for i, v := range vals {
		sv, ok := v.(string)
		if !ok {
			continue
		}
		g, err := parseGrant(users[i], sv)
		if err != nil || !g.ExpiresAt.After(now) {
			continue
		}
		out[users[i]] = g
	}
	return out, nil
}

// Seqs implements waitroom.Store.
func (s *Store) Seqs(ctx context.Context, show string, users []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(users) == 0 {
		return out, nil
	}
	vals, err := s.rdb.ZMScore(ctx, Wait(show), users...).Result()
	if err != nil {
		return nil, storeErr("seqs", err)
	}
	for i, v := range vals {
		if v > 0 {
			out[users[i]] = int64(v)
		}
	}
	return out, nil
}
