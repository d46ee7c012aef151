// Package redis is the waiting room's store on Redis (go-redis/v9): one queue per show, every key hash-tagged with
// rediskey.Tag(show) so each Lua script touches one cluster slot. Each script sits next to the Go that loads it:
// join.lua (join/lookup) in join.go, admit.lua (the per-tick pop-and-issue) and tokens.lua in admit.go, place.lua
// (the opening draw) in draw.go, touch.lua in heartbeat.go, restore.lua and ceiling.lua in durable.go.
//
// Keys of show S (T = rediskey.Tag(S)):
//
//	T:wr:wait    sorted set  user -> ticket (seq); the queue
//	T:wr:pre     set         users who joined before the sale opened (the draw's pool; kept a week for audit)
//	T:wr:hb      sorted set  user -> last heartbeat (Redis ms); only queued fans
//	T:wr:state   hash        lastSeq ceiling cursor lastTick carry admittedTotal skippedTotal drawn drawCount
//	                         drawDigest (ceiling: tickets reserved in the record; its absence means "rebuild"),
//	                         engaged engagedAt underSince (threshold mode: queueing now, and since when the
//	                         figures have been under the thresholds with nobody in line)
//	T:wr:grants  hash        user -> "jti|expMs|iatMs[|token]"
//	T:wr:gexp    sorted set  jti -> expMs (our own copy of rediskey.QueueActive, which booking trims)
//	T:wr:jti     hash        jti -> user
//	T:wr:unrec   sorted set  jti -> ticket: grants not yet recorded in PostgreSQL, hence without a token
//	T:wr:seed    string      the shuffle seed (hex); its SHA-256 is the published commitment
//	T:wr:drawlock string     the draw lock
//	T:wr:mark    string      written before each WAIT (replicas.go), so that WAIT covers what the scripts read
//	T:bot:stats  hash        the guard's figures (issued solved failed shadowed refused:*, arr arrAt: new places
//	                         as a decaying count) and the arrivals over the last minute: 60 one-second buckets
//	                         a:0..a:59, their total a:total and the second last counted a:last (arrivals.lua)
//
// plus rediskey.QueueConfig, QueueActive, QueueRevoked (booking's) and ShowInfo (read only).
package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	goredis "github.com/redis/go-redis/v9"

	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// Key names of a show's waiting-room keys.
func Wait(show string) string       { return rediskey.Tag(show) + ":wr:wait" }
func Pre(show string) string        { return rediskey.Tag(show) + ":wr:pre" }
func Heartbeat(show string) string  { return rediskey.Tag(show) + ":wr:hb" }
func State(show string) string      { return rediskey.Tag(show) + ":wr:state" }
func Grants(show string) string     { return rediskey.Tag(show) + ":wr:grants" }
func GrantExp(show string) string   { return rediskey.Tag(show) + ":wr:gexp" }
func JTI(show string) string        { return rediskey.Tag(show) + ":wr:jti" }
func Unrecorded(show string) string { return rediskey.Tag(show) + ":wr:unrec" }
func Seed(show string) string       { return rediskey.Tag(show) + ":wr:seed" }
func DrawLock(show string) string   { return rediskey.Tag(show) + ":wr:drawlock" }
func Skipped(show string) string    { return rediskey.Tag(show) + ":wr:skipped" }

// Marks holds a line's arrival marks (waitroom/lines.go): member the mark's time, score its ticket.
func Marks(show string) string { return rediskey.Tag(show) + ":wr:marks" }

// TickLock is held by the replica running a partitioned queue's tick (lines.go), so that one budget is spent once.
func TickLock(show string) string { return rediskey.Tag(show) + ":wr:ticklock" }

// Returned names the fans given back a ticket from before the queue's last rebuild (join.lua), so that each gets
// it back once.
func Returned(show string) string { return rediskey.Tag(show) + ":wr:returned" }

// Key names of a show's bot-protection keys (guard.go).
func BotStats(show string) string    { return rediskey.Tag(show) + ":bot:stats" }
func BotSolves(show string) string   { return BotStats(show) + ":solves" }
func BotPlaces(show string) string   { return rediskey.Tag(show) + ":bot:places" }
func BotShadow(show string) string   { return rediskey.Tag(show) + ":bot:shadow" }
func BotBrowsers(show string) string { return rediskey.Tag(show) + ":bot:browsers" }
func BotPressure(show string) string { return rediskey.Tag(show) + ":bot:pressure" }
func BotSpent(show, challenge string) string {
	return rediskey.Tag(show) + ":bot:spent:" + challenge
}

// Keys lists every key the waiting room keeps for a show (for tests and cleanup).
func Keys(show string) []string {
	return []string{Wait(show), Pre(show), Heartbeat(show), State(show), Grants(show), GrantExp(show), JTI(show),
		Unrecorded(show), Seed(show), DrawLock(show), Skipped(show), Returned(show), BotStats(show), BotSolves(show),
		BotPlaces(show), BotShadow(show), BotBrowsers(show), BotPressure(show), Mark(show), Marks(show), TickLock(show),
		rediskey.QueueConfig(show),
		rediskey.QueueActive(show), rediskey.QueueRevoked(show), rediskey.ShowInfo(show)}
}

// Store is the Redis implementation of waitroom.Store.
type Store struct {
	rdb goredis.UniversalClient
	// joins runs join.lua. In a flash crowd thousands of joins arrive at once, each one short script: sent one per
	// round trip, most of Redis's and our time goes to the read and write of each request, not to the script. The
	// client's autopipeliner sends the scripts of concurrent joiners together, each still its own atomic script
	// answered to its own caller; a lone joiner is sent at once. A queued script is not withdrawn when its
	// caller's context ends (its batch answers within the client's read timeout), so join checks the context
	// before queueing. Without an autopipeliner (a client that has none), rdb.
	joins goredis.Scripter
	// keys holds each recent show's join.lua keys: built on every join and status poll they were 9 allocations,
	// and go-redis only reads them. Bounded, so ids of shows that do not exist cannot grow it.
	keys *lru.Cache[string, []string]
	// replicas, when set (WaitReplicas), answers joins only once their writes are on the replicas.
	replicas *replicas
	// lines is what this replica knows of partitioned shows (lines.go).
	lines lines
}

// maxKeyedShows bounds Store.keys: shows on sale at once, with room to spare.
const maxKeyedShows = 4096

// New returns a store on rdb.
func New(rdb goredis.UniversalClient) *Store {
	keys, _ := lru.New[string, []string](maxKeyedShows) // errs only for a size below 1
	s := &Store{rdb: rdb, joins: rdb, keys: keys,
		lines: lines{parts: map[string]partsEntry{}, views: map[string]*lineView{}}}
	if ap, err := rdb.AutoPipeline(); err == nil { // cached by the client and closed with it
		s.joins = ap
	}
	return s
}

var _ waitroom.Store = (*Store)(nil)

// storeErr names the failed operation and translates the driver's failure: a Redis that cannot be reached or
// cannot serve now (driver.Unavailable: a refused connection, a timeout, an exhausted pool, LOADING) is
// ErrUnavailable, which callers may retry; a refused command stays an internal error.
func storeErr(op string, err error) error {
	if driver.Unavailable(err) {
		return fmt.Errorf("waitroom/redis: %s: %w: %w", op, waitroom.ErrUnavailable, err)
	}
	return fmt.Errorf("waitroom/redis: %s: %w", op, err)
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// Counts implements waitroom.Store: a partitioned queue's, summed over its lines.
func (s *Store) Counts(ctx context.Context, show string) (waitroom.Counts, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return waitroom.Counts{}, err
	}
	c := waitroom.Counts{Lanes: []waitroom.LaneCounts{}}
	list := s.lanesOf(show, k).List()
	for _, l := range list {
		c.Lanes = append(c.Lanes, waitroom.LaneCounts{Name: l.Name, Share: l.Share})
	}
	for p, line := range rediskey.Lines(show, k) {
		lc, err := s.lineCounts(ctx, line)
		if err != nil {
			return c, err
		}
		if len(list) > 0 {
			lane := &c.Lanes[p/(k/len(list))]
			lane.Waiting += lc.Waiting
			lane.Active += lc.Active
			lane.Admitted += lc.AdmittedTotal + lc.BypassedTotal
		}
		c.BypassedTotal += lc.BypassedTotal
		if line == show {
			c.Engaged = lc.Engaged
		}
		c.Waiting += lc.Waiting
		c.Active += lc.Active
		c.AdmittedTotal += lc.AdmittedTotal
		c.SkippedTotal += lc.SkippedTotal
		c.ArrivalsPerMinute += lc.ArrivalsPerMinute
		c.PartitionSizes = append(c.PartitionSizes, lc.Waiting)
	}
	return c, nil
}

// lineCounts reads one line's counters (a single queue's are its show's).
func (s *Store) lineCounts(ctx context.Context, show string) (waitroom.Counts, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	p := s.rdb.Pipeline()
	wait := p.ZCard(ctx, Wait(show))
	pool := p.SCard(ctx, Pre(show))
	active := p.ZCount(ctx, rediskey.QueueActive(show), "("+now, "+inf")
	st := p.HMGet(ctx, State(show), "drawn", "admittedTotal", "skippedTotal", "engaged", "bypassedTotal")
	arr := p.HGetAll(ctx, BotStats(show)) // holds the arrivals' ring
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return waitroom.Counts{}, storeErr("counts", err)
	}
	vals := st.Val()
	c := waitroom.Counts{Waiting: wait.Val(), Active: active.Val(), ArrivalsPerMinute: lastMinute(arr.Val(), time.Now())}
	if len(vals) == 5 {
		if vals[0] != "1" {
			c.Waiting += pool.Val()
		}
		c.AdmittedTotal, c.SkippedTotal, c.BypassedTotal = num(vals[1]), num(vals[2]), num(vals[4])
		c.Engaged = vals[3] == "1"
	}
	return c, nil
}

// lastMinute reads arrivals.lua's ring (h) as it would stand at now: the buckets of the seconds still inside the
// minute. A read only, so it does not advance the ring.
func lastMinute(h map[string]string, now time.Time) int64 {
	last, err := strconv.ParseInt(h["a:last"], 10, 64)
	sec := now.Unix()
	if err != nil || sec-last >= 60 {
		return 0
	}
	var n int64
	for s := max(sec-59, last-59); s <= last; s++ {
		v, _ := strconv.ParseInt(h["a:"+strconv.FormatInt(s%60, 10)], 10, 64)
		n += v
	}
	return n
}

// Exists implements waitroom.Store.
func (s *Store) Exists(ctx context.Context, show string) (bool, error) {
	n, err := s.rdb.Exists(ctx, rediskey.QueueConfig(show), rediskey.ShowInfo(show)).Result()
	if err != nil {
		return false, storeErr("exists", err)
	}
	return n > 0, nil
}

// Events implements waitroom.Store: show ids announced on rediskey.QueueConfigEvents and AvailabilityEvents.
func (s *Store) Events(ctx context.Context) <-chan string {
	return admredis.Subscribe(ctx, s.rdb, rediskey.QueueConfigEvents, rediskey.AvailabilityEvents)
}
