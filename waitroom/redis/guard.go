package redis

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed pressure.lua
	pressureLua    string
	pressureScript = goredis.NewScript(pressureLua)
)

// Pressure implements waitroom.GuardStore (pressure.lua).
func (s *Store) Pressure(ctx context.Context, show, prefix string, halfLife time.Duration) (float64, float64, error) {
	return s.pressure(ctx, []string{BotPressure(show), BotStats(show)}, prefix, halfLife, true)
}

// The guest limit's keys: not a show's, so under a hash tag of their own (one cluster slot for the script).
const (
	guestPressure = "{guest}:pressure"
	guestStats    = "{guest}:stats"
)

// GuestPressure implements waitroom.GuestStore.
func (s *Store) GuestPressure(ctx context.Context, prefix string, halfLife time.Duration, count bool) (float64, error) {
	p, _, err := s.pressure(ctx, []string{guestPressure, guestStats}, prefix, halfLife, count)
	return p, err
}

// SpendGuestProof implements waitroom.GuestStore.
func (s *Store) SpendGuestProof(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, "{guest}:spent:"+id, 1, ttl).Result()
	if err != nil {
		return false, storeErr("spend guest proof", err)
	}
	return ok, nil
}

func (s *Store) pressure(ctx context.Context, keys []string, prefix string, halfLife time.Duration, count bool) (float64, float64, error) {
	flag := "0"
	if count {
		flag = "1"
	}
	r, err := pressureScript.Run(ctx, s.rdb, keys, prefix, max(halfLife.Milliseconds(), 1), flag).StringSlice()
	if err != nil {
		return 0, 0, storeErr("pressure", err)
	}
	if len(r) != 2 {
		return 0, 0, fmt.Errorf("waitroom/redis: pressure: unexpected reply %v", r)
	}
	p, _ := strconv.ParseFloat(r[0], 64)
	load, _ := strconv.ParseFloat(r[1], 64)
	return p, load, nil
}

// topPrefixes is how many prefixes BotFigures lists.
const topPrefixes = 10

// BotFigures implements waitroom.GuardStore: the stats hash, the recent solve times and the top prefixes, in one
// round trip per line (a line's keys share its hash tag), summed over a partitioned queue's lines.
func (s *Store) BotFigures(ctx context.Context, show string) (waitroom.BotFigures, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return waitroom.BotFigures{}, err
	}
	f := waitroom.BotFigures{Refused: map[string]int64{}, TopPrefixes: []waitroom.PrefixPlaces{}}
	places := map[string]int64{}
	for _, line := range rediskey.Lines(show, k) {
		if err := s.lineBotFigures(ctx, line, &f, places); err != nil {
			return f, err
		}
	}
	for m, n := range places {
		f.TopPrefixes = append(f.TopPrefixes, waitroom.PrefixPlaces{Prefix: m, Places: n})
	}
	sort.Slice(f.TopPrefixes, func(i, j int) bool {
		a, b := f.TopPrefixes[i], f.TopPrefixes[j]
		return a.Places > b.Places || a.Places == b.Places && a.Prefix > b.Prefix
	})
	f.TopPrefixes = f.TopPrefixes[:min(len(f.TopPrefixes), topPrefixes)]
	f.Solves = f.Solves[:min(len(f.Solves), 1000)]
	return f, nil
}

// lineBotFigures adds one line's figures to f, and its top prefixes' places to places.
func (s *Store) lineBotFigures(ctx context.Context, show string, f *waitroom.BotFigures, places map[string]int64) error {
	var stats *goredis.MapStringStringCmd
	var solves *goredis.StringSliceCmd
	var top *goredis.ZSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		stats = p.HGetAll(ctx, BotStats(show))
		solves = p.LRange(ctx, BotSolves(show), 0, 999) // join.lua lets the list run to 1100 between trims
		top = p.ZRevRangeWithScores(ctx, BotPlaces(show), 0, topPrefixes-1)
		return nil
	})
	if err != nil {
		return storeErr("bot figures", err)
	}
	for k, v := range stats.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case k == "issued":
			f.Issued += n
		case k == "solved":
			f.Solved += n
		case k == "failed":
			f.Failed += n
		case k == "shadowed":
			f.Shadowed += n
		case strings.HasPrefix(k, "refused:"):
			f.Refused[strings.TrimPrefix(k, "refused:")] += n
		}
	}
	for _, v := range solves.Val() {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			f.Solves = append(f.Solves, n)
		}
	}
	for _, z := range top.Val() {
		m, _ := z.Member.(string)
		places[m] += int64(z.Score)
	}
	return nil
}
