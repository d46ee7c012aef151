package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// A browser holds one place in a show's queue, under one identity: join.lua's rule, checked in the script
// against the line's record of browsers. In a partitioned queue a second identity from the same browser is
// routed by its own id and may land on another line, whose script never saw the first; so there the rule is
// kept outside the scripts. A browser's holder is recorded on the browser's own line (rediskey.PartitionOf of
// the browser id), read before the join and written after it. Between that read and that write a second
// identity joining from the same browser at the same instant also gets in: one extra place per such race, which
// a page never runs and which gives a script no more than a second cookie would.

// browserReason is the browser rule's reason among StoreReasons (join.lua's order).
const browserReason = 1

// browserHeld reports whether browser already holds a place in show's k lines under an identity other than user.
func (s *Store) browserHeld(ctx context.Context, show string, k int, user, browser string) (bool, error) {
	home := rediskey.Line(show, rediskey.PartitionOf(browser, k), k)
	other, err := s.rdb.HGet(ctx, BotBrowsers(home), browser).Result()
	if errors.Is(err, goredis.Nil) || other == user {
		return false, nil
	}
	if err != nil {
		return false, storeErr("browser", err)
	}
	line, _, err := s.lineOf(ctx, show, other, k)
	if err != nil {
		return false, err
	}
	var waiting *goredis.FloatCmd
	var admitted, pre *goredis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		waiting = p.ZScore(ctx, Wait(line), other)
		admitted = p.HExists(ctx, Grants(line), other)
		pre = p.SIsMember(ctx, Pre(line), other)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return false, storeErr("browser", err)
	}
	return waiting.Err() == nil || admitted.Val() || pre.Val(), nil
}

// refuseBrowser counts the browser rule's refusal of user's join in their line's figures, as join.lua counts
// its own, and answers it.
func (s *Store) refuseBrowser(ctx context.Context, line string) (waitroom.Entry, error) {
	reason := waitroom.StoreReasons[browserReason]
	if err := s.rdb.HIncrBy(ctx, BotStats(line), "refused:"+reason, 1).Err(); err != nil {
		return waitroom.Entry{}, storeErr("browser", err)
	}
	return waitroom.Entry{Found: true, Refused: reason}, nil
}

// takeBrowser records user as browser's holder in show's k lines, once their join holds a place.
func (s *Store) takeBrowser(ctx context.Context, show string, k int, user, browser string) error {
	home := rediskey.Line(show, rediskey.PartitionOf(browser, k), k)
	if err := s.rdb.HSet(ctx, BotBrowsers(home), browser, user).Err(); err != nil {
		return storeErr("browser", err)
	}
	return nil
}
