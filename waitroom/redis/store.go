// Package redis is the waiting room's store on Redis (go-redis/v9): one queue per show, every key hash-tagged with
// rediskey.Tag(show) so each Lua script touches one cluster slot. The scripts sit next to this file: join.lua
// (join/lookup), admit.lua (the per-tick pop-and-issue), place.lua (the opening draw), tokens.lua and touch.lua.
//
// Keys of show S (T = rediskey.Tag(S)):
//
//	T:wr:wait    sorted set  user -> ticket (seq); the queue
//	T:wr:pre     set         users who joined before the sale opened (the draw's pool; kept a week for audit)
//	T:wr:hb      sorted set  user -> last heartbeat (Redis ms); only queued fans
//	T:wr:state   hash        lastSeq ceiling cursor lastTick carry admittedTotal skippedTotal drawn drawCount
//	                         drawDigest (ceiling: tickets reserved in the record; its absence means "rebuild")
//	T:wr:grants  hash        user -> "jti|expMs|iatMs[|token]"
//	T:wr:gexp    sorted set  jti -> expMs (our own copy of rediskey.QueueActive, which booking trims)
//	T:wr:jti     hash        jti -> user
//	T:wr:unrec   sorted set  jti -> ticket: grants not yet recorded in PostgreSQL, hence without a token
//	T:wr:seed    string      the shuffle seed (hex); its SHA-256 is the published commitment
//	T:wr:drawlock string     the draw lock
//
// plus rediskey.QueueConfig, QueueActive, QueueRevoked (booking's) and ShowInfo (read only).
package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/store/driver"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed join.lua
	joinLua    string
	joinScript = goredis.NewScript(joinLua)
	//go:embed admit.lua
	admitLua    string
	admitScript = goredis.NewScript(admitLua)
	//go:embed place.lua
	placeLua    string
	placeScript = goredis.NewScript(placeLua)
	//go:embed tokens.lua
	tokensLua    string
	tokensScript = goredis.NewScript(tokensLua)
	//go:embed touch.lua
	touchLua    string
	touchScript = goredis.NewScript(touchLua)
	//go:embed restore.lua
	restoreLua    string
	restoreScript = goredis.NewScript(restoreLua)
	//go:embed ceiling.lua
	ceilingLua    string
	ceilingScript = goredis.NewScript(ceilingLua)
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

// Keys lists every key the waiting room keeps for a show (for tests and cleanup).
func Keys(show string) []string {
	return []string{Wait(show), Pre(show), Heartbeat(show), State(show), Grants(show), GrantExp(show), JTI(show),
		Unrecorded(show), Seed(show), DrawLock(show), rediskey.QueueConfig(show), rediskey.QueueActive(show),
		rediskey.QueueRevoked(show), rediskey.ShowInfo(show)}
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
}

// New returns a store on rdb.
func New(rdb goredis.UniversalClient) *Store {
	s := &Store{rdb: rdb, joins: rdb}
	if ap, err := rdb.AutoPipeline(); err == nil { // cached by the client and closed with it
		s.joins = ap
	}
	return s
}

var _ waitroom.Store = (*Store)(nil)

func joinKeys(show string) []string {
	return []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show)}
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
	flag := "0"
	if join {
		flag = "1"
	}
	if err := ctx.Err(); err != nil {
		return waitroom.Entry{}, storeErr("join", err)
	}
	r, err := joinScript.Run(ctx, s.joins, joinKeys(show), user, flag, receipted).Slice()
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

// storeErr names the failed operation and translates the driver's failure: a Redis that cannot be reached or
// cannot serve now (store.Unavailable: a refused connection, a timeout, an exhausted pool, LOADING) is
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
func (s *Store) Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (waitroom.Snapshot, error) {
	keys := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show), GrantExp(show), JTI(show), Unrecorded(show)}
	r, err := admitScript.Run(ctx, s.rdb, keys, nonce, grace.Milliseconds(), maxScan, overdueAfter.Milliseconds()).Slice()
	if err != nil {
		return waitroom.Snapshot{}, storeErr("admit", err)
	}
	if len(r) == 1 {
		switch str(r[0]) {
		case "unknown":
			return waitroom.Snapshot{}, waitroom.ErrNoSettings
		case "restore":
			return waitroom.Snapshot{}, waitroom.ErrNoState
		}
	}
	if len(r) < 14 {
		return waitroom.Snapshot{}, fmt.Errorf("waitroom/redis: admit: short reply %v", r)
	}
	rate, _ := strconv.ParseFloat(str(r[9]), 64)
	snap := waitroom.Snapshot{
		Show: show, Phase: waitroom.Phase(str(r[0])), Cursor: num(r[1]), LastSeq: num(r[2]), Waiting: num(r[3]),
		Active: num(r[4]), AdmittedTotal: num(r[5]), SkippedTotal: num(r[6]), At: time.UnixMilli(num(r[7])),
		AdmitPerSecond: rate, MaxActive: num(r[10]), DurableCursor: num(r[12]),
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

// Touch implements waitroom.Store, in chunks so no single script runs long.
func (s *Store) Touch(ctx context.Context, show string, users []string) ([]string, error) {
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

// Seed implements waitroom.Store: SETNX makes the first seed the only one.
func (s *Store) Seed(ctx context.Context, show, fresh string) (string, error) {
	if fresh != "" {
		if err := s.rdb.SetNX(ctx, Seed(show), fresh, 0).Err(); err != nil {
			return "", storeErr("seed", err)
		}
	}
	v, err := s.rdb.Get(ctx, Seed(show)).Result()
	if err != nil {
		return "", storeErr("seed", err)
	}
	return v, nil
}

// DrawLock implements waitroom.Store.
func (s *Store) DrawLock(ctx context.Context, show string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, DrawLock(show), "1", ttl).Result()
	if err != nil {
		return false, storeErr("draw lock", err)
	}
	return ok, nil
}

// DrawUnlock implements waitroom.Store.
func (s *Store) DrawUnlock(ctx context.Context, show string) error {
	if err := s.rdb.Del(ctx, DrawLock(show)).Err(); err != nil {
		return storeErr("draw unlock", err)
	}
	return nil
}

// PreJoiners implements waitroom.Store, scanning so a million members do not make one huge reply.
func (s *Store) PreJoiners(ctx context.Context, show string) ([]string, error) {
	var out []string
	it := s.rdb.SScan(ctx, Pre(show), 0, "", 10000).Iterator()
	for it.Next(ctx) {
		out = append(out, it.Val())
	}
	if err := it.Err(); err != nil {
		return nil, storeErr("pre-joiners", err)
	}
	return out, nil
}

// placeChunk is the tickets written per place.lua call: small enough for one unpack() in Lua (at most ~8,000
// values) and for a short script, large enough that a million tickets take few round trips.
const placeChunk = 3000

// Place implements waitroom.Store: chunks of placeChunk tickets, sent ten scripts per round trip (each script is
// atomic and checks the drawn mark itself), then the finishing mark.
func (s *Store) Place(ctx context.Context, show string, ordered []string, digest string) error {
	keys := []string{State(show), Wait(show), Pre(show)}
	for i := 0; i < len(ordered); {
		p := s.rdb.Pipeline()
		var cmds []*goredis.Cmd
		for k := 0; k < 10 && i < len(ordered); k++ {
			end := min(i+placeChunk, len(ordered))
			args := make([]any, 0, end-i+2)
			args = append(args, "chunk", i+1)
			for _, u := range ordered[i:end] {
				args = append(args, u)
			}
			cmds = append(cmds, placeScript.Eval(ctx, p, keys, args...))
			i = end
		}
		// EVAL, not EVALSHA, inside a pipeline: a NOSCRIPT reply could not be retried per command.
		if _, err := p.Exec(ctx); err != nil {
			return storeErr("place", err)
		}
		for _, c := range cmds {
			if n, _ := c.Int(); n == 0 {
				return nil // someone else finished the draw
			}
		}
	}
	if err := placeScript.Run(ctx, s.rdb, keys, "finish", len(ordered), digest).Err(); err != nil {
		return storeErr("place", err)
	}
	return nil
}

// Fairness implements waitroom.Store.
func (s *Store) Fairness(ctx context.Context, show string) (waitroom.Fairness, error) {
	p := s.rdb.Pipeline()
	seed := p.Get(ctx, Seed(show))
	st := p.HMGet(ctx, State(show), "drawn", "drawCount", "drawDigest")
	opens := p.HGet(ctx, rediskey.ShowInfo(show), rediskey.InfoSaleStartsAt)
	pool := p.SCard(ctx, Pre(show))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return waitroom.Fairness{}, storeErr("fairness", err)
	}
	var f waitroom.Fairness
	f.Seed = seed.Val()
	c, err := waitroom.Commit(f.Seed)
	if err != nil {
		return f, fmt.Errorf("waitroom/redis: fairness: %w", err)
	}
	f.Commitment = c
	vals := st.Val()
	f.Drawn = len(vals) == 3 && vals[0] == "1"
	if f.Drawn {
		f.Participants = num(vals[1])
		f.ParticipantsSHA256 = str(vals[2])
	} else {
		f.Participants = pool.Val()
	}
	if ms, err := strconv.ParseInt(opens.Val(), 10, 64); err == nil && ms > 0 {
		f.SaleStartsAt = time.UnixMilli(ms).UTC()
	}
	return f, nil
}

// Restore implements waitroom.Store (restore.lua).
func (s *Store) Restore(ctx context.Context, show string, d waitroom.Durable) error {
	args := []any{d.Cursor, d.Ceiling, flag(d.Drawn), d.DrawCount, d.DrawDigest, d.Seed, d.SaleStartsAt.UnixMilli()}
	if d.SaleStartsAt.IsZero() {
		args[6] = 0
	}
	for _, g := range d.Grants {
		args = append(args, g.UserID, g.JTI, g.ExpiresAt.UnixMilli(), g.IssuedAt.UnixMilli())
	}
	keys := []string{State(show), Seed(show), Grants(show), GrantExp(show), JTI(show), rediskey.ShowInfo(show)}
	if err := restoreScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
		return storeErr("restore", err)
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

// Counts implements waitroom.Store.
func (s *Store) Counts(ctx context.Context, show string) (waitroom.Counts, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	p := s.rdb.Pipeline()
	wait := p.ZCard(ctx, Wait(show))
	pool := p.SCard(ctx, Pre(show))
	active := p.ZCount(ctx, rediskey.QueueActive(show), "("+now, "+inf")
	st := p.HMGet(ctx, State(show), "drawn", "admittedTotal", "skippedTotal")
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return waitroom.Counts{}, storeErr("counts", err)
	}
	vals := st.Val()
	c := waitroom.Counts{Waiting: wait.Val(), Active: active.Val()}
	if len(vals) == 3 {
		if vals[0] != "1" {
			c.Waiting += pool.Val()
		}
		c.AdmittedTotal, c.SkippedTotal = num(vals[1]), num(vals[2])
	}
	return c, nil
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
