// Package redis is the queue-state cache of shared/admission on Redis (go-redis/v9): a show's settings in
// rediskey.QueueConfig, its active admissions in QueueActive and its revoked token ids in QueueRevoked (all under
// the show's hash tag, so one script touches one cluster slot), plus the global QueueSynced mark that tells the
// keeper Redis lost its data. A show without cached settings is never read as "no record" here: that is the
// record's to say (see admission.Presence). Once the record has said it, the answer is cached on the show's own
// settings key (version 0, queue off), so it is lost together with the show's other keys, never apart from them.
package redis

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/rediskey"
)

var (
	//go:embed fill.lua
	fillLua    string
	fillScript = goredis.NewScript(fillLua)
	//go:embed put.lua
	putLua    string
	putScript = goredis.NewScript(putLua)
)

// Cache implements admission.Cache.
type Cache struct {
	rdb goredis.UniversalClient
}

// New returns a cache on rdb.
func New(rdb goredis.UniversalClient) *Cache { return &Cache{rdb: rdb} }

var _ admission.Cache = (*Cache)(nil)

// configFields are the settings' fields in the cache, in the order settingsArgs writes them; the scripts take them
// as field-value pairs, so a field added here needs no change to put.lua or fill.lua.
var configFields = []string{rediskey.QueueEnabled, rediskey.QueueAdmitPerSecond, rediskey.QueueMaxActive,
	rediskey.QueueTokenTTLSeconds, rediskey.QueuePaused, rediskey.QueueTurnHold, rediskey.QueueBot, rediskey.QueuePage,
	rediskey.QueueMode, rediskey.QueueTuning, rediskey.QueueActiveThreshold, rediskey.QueueArrivalThreshold,
	rediskey.QueueCooldown, rediskey.QueuePartitions, rediskey.QueueLanes}

// Lookup implements admission.Cache: one HMGET.
func (c *Cache) Lookup(ctx context.Context, show string) (admission.Settings, admission.Presence, error) {
	vals, err := c.rdb.HMGet(ctx, rediskey.QueueConfig(show), configFields...).Result()
	if err != nil {
		return admission.Settings{}, admission.Unknown, fmt.Errorf("admission/redis: settings: %w", err)
	}
	if s, ok := parse(vals); ok {
		return s, admission.Cached, nil
	}
	return admission.Settings{}, admission.Unknown, nil
}

// Version implements admission.Cache. Settings written without a version (SetSettings) count as version 0.
func (c *Cache) Version(ctx context.Context, show string) (int64, bool, error) {
	vals, err := c.rdb.HMGet(ctx, rediskey.QueueConfig(show), rediskey.QueueEnabled, rediskey.QueueVersion).Result()
	if err != nil {
		return 0, false, fmt.Errorf("admission/redis: settings version: %w", err)
	}
	if len(vals) != 2 || vals[0] == nil {
		return 0, false, nil
	}
	v, _ := vals[1].(string)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n, true, nil
}

// parse reads HMGET's values of configFields; ok is false when nothing is cached.
func parse(vals []any) (admission.Settings, bool) {
	str := func(i int) string { s, _ := vals[i].(string); return s }
	if len(vals) != len(configFields) || vals[0] == nil {
		return admission.Settings{}, false
	}
	s := admission.DefaultSettings()
	s.Enabled = str(0) == "1"
	if v, err := strconv.ParseFloat(str(1), 64); err == nil {
		s.AdmitPerSecond = v
	}
	if v, err := strconv.Atoi(str(2)); err == nil {
		s.MaxActive = v
	}
	if v, err := strconv.Atoi(str(3)); err == nil {
		s.TokenTTLSeconds = v
	}
	s.Paused = str(4) == "1"
	if v, err := strconv.Atoi(str(5)); err == nil {
		s.TurnHoldSeconds = v
	}
	if b := str(6); b != "" {
		// Onto the defaults, as the record reads it; a malformed copy keeps them (the record has the truth).
		bot := s.Bot
		if json.Unmarshal([]byte(b), &bot) == nil {
			s.Bot = bot
		}
	}
	if b := str(7); b != "" {
		page := s.Page
		if json.Unmarshal([]byte(b), &page) == nil {
			s.Page = page
		}
	}
	s.Mode = str(8)
	if s.Mode == "" {
		s.Mode = s.QueueMode() // cached by a binary that predates modes
	}
	if b := str(9); b != "" {
		t := s.Tuning
		if json.Unmarshal([]byte(b), &t) == nil {
			s.Tuning = t
		}
	}
	return s, true
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// settingsValues are the values of configFields, in order.
func settingsValues(s admission.Settings) []any {
	bot, _ := json.Marshal(s.Bot)       // a struct of plain fields always marshals
	page, _ := json.Marshal(s.Page)     // likewise
	tuning, _ := json.Marshal(s.Tuning) // likewise
	return []any{flag(s.Enabled), strconv.FormatFloat(s.AdmitPerSecond, 'f', -1, 64), s.MaxActive,
		s.TokenTTLSeconds, flag(s.Paused), s.TurnHoldSeconds, string(bot), string(page), s.QueueMode(), string(tuning),
		s.ActiveUsersThreshold, s.NewUsersPerMinuteThreshold, s.CooldownSeconds, s.LineCount(), s.Lanes.String()}
}

// settingsArgs are put.lua's and fill.lua's first arguments: the version, the number of field-value arguments,
// then a field and its value for each configFields.
func settingsArgs(s admission.Settings, version int64) []any {
	args := make([]any, 0, 2+2*len(configFields))
	args = append(args, version, 2*len(configFields))
	for i, v := range settingsValues(s) {
		args = append(args, configFields[i], v)
	}
	return args
}

// Revoked implements admission.Cache: the revocations and the settings' presence in one round trip (ZMSCORE and
// EXISTS, pipelined: both keys carry the show's hash tag, so on a cluster they are one node's).
func (c *Cache) Revoked(ctx context.Context, show string, jtis []string) (revoked []bool, cached bool, err error) {
	var scores *goredis.Cmd
	var exists *goredis.IntCmd
	_, err = c.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		if len(jtis) > 0 {
			args := make([]any, 0, 2+len(jtis))
			args = append(args, "zmscore", rediskey.QueueRevoked(show))
			for _, j := range jtis {
				args = append(args, j)
			}
			// Do, not ZMScore: ZMScore reads a missing member as a score of 0, and only the nil says "absent".
			scores = p.Do(ctx, args...)
		}
		exists = p.Exists(ctx, rediskey.QueueConfig(show))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("admission/redis: revocation: %w", err)
	}
	revoked = make([]bool, len(jtis))
	if scores != nil {
		vals, err := scores.Slice()
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("admission/redis: revocation: %w", err)
		case len(vals) != len(jtis):
			return nil, false, fmt.Errorf("admission/redis: revocation: %d answers for %d ids", len(vals), len(jtis))
		}
		for i, v := range vals {
			revoked[i] = v != nil
		}
	}
	return revoked, exists.Val() == 1, nil
}

// Fill implements admission.Cache. Version 0 (no record) is cached as queue off only for a show booking's
// ShowInfo says exists (fill.lua), so requests for made-up show ids leave no keys behind.
func (c *Cache) Fill(ctx context.Context, show string, s admission.Settings, version int64, live, revoked []admission.Grant) error {
	args := settingsArgs(s, version)
	// A partitioned queue's lines hold their own admissions among their active ones (waitroom/redis restores
	// them with the line): the show's active set holds only its own.
	own := make([]admission.Grant, 0, len(live))
	for _, g := range live {
		if rediskey.LineOfJTI(show, g.JTI) == show {
			own = append(own, g)
		}
	}
	args = append(args, len(own))
	for _, gs := range [][]admission.Grant{own, revoked} {
		for _, g := range gs {
			args = append(args, g.ExpiresAt.UnixMilli(), g.JTI)
		}
	}
	keys := []string{rediskey.QueueConfig(show), rediskey.QueueActive(show), rediskey.QueueRevoked(show),
		rediskey.ShowInfo(show)}
	if err := fillScript.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("admission/redis: fill %s: %w", show, err)
	}
	return nil
}

// Put implements admission.Cache.
func (c *Cache) Put(ctx context.Context, show string, s admission.Settings, version int64) (bool, error) {
	n, err := putScript.Run(ctx, c.rdb, []string{rediskey.QueueConfig(show)}, settingsArgs(s, version)...).Int()
	if err != nil {
		return false, fmt.Errorf("admission/redis: put %s: %w", show, err)
	}
	if n < 0 {
		return false, nil
	}
	return true, c.announce(ctx, show)
}

// announce publishes a changed show on rediskey.QueueConfigEvents, so every replica applies the change at once
// rather than at its next cache refresh.
func (c *Cache) announce(ctx context.Context, show string) error {
	if err := c.rdb.Publish(ctx, rediskey.QueueConfigEvents, show).Err(); err != nil {
		return fmt.Errorf("admission/redis: announce settings: %w", err)
	}
	return nil
}

// SetSettings writes a show's settings straight into the cache and announces them, with no record behind them:
// for tools and tests that run without PostgreSQL. A record's later version replaces them.
func (c *Cache) SetSettings(ctx context.Context, show string, s admission.Settings) error {
	if err := c.rdb.HSet(ctx, rediskey.QueueConfig(show), settingsArgs(s, 0)[2:]...).Err(); err != nil {
		return fmt.Errorf("admission/redis: set settings: %w", err)
	}
	return c.announce(ctx, show)
}

// Release implements admission.Cache. Both keys share the show's hash tag, so one MULTI suffices on a cluster;
// an admission of a partitioned queue's line (rediskey.ActiveFor) is on another slot, and goes first: a slot
// freed before the revocation is written only lets the next fan in a moment early.
func (c *Cache) Release(ctx context.Context, g admission.Grant) error {
	if g.JTI == "" {
		return nil
	}
	active := rediskey.ActiveFor(g.ShowID, g.JTI)
	if active != rediskey.QueueActive(g.ShowID) {
		if err := c.rdb.ZRem(ctx, active, g.JTI).Err(); err != nil {
			return fmt.Errorf("admission/redis: release %s: %w", g.JTI, err)
		}
	}
	_, err := c.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.ZRem(ctx, rediskey.QueueActive(g.ShowID), g.JTI)
		p.ZAdd(ctx, rediskey.QueueRevoked(g.ShowID), goredis.Z{Score: float64(g.ExpiresAt.UnixMilli()), Member: g.JTI})
		// Trim revocations of tokens that have expired on their own: they are refused by exp already.
		p.ZRemRangeByScore(ctx, rediskey.QueueRevoked(g.ShowID), "-inf", strconv.FormatInt(time.Now().UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("admission/redis: release %s: %w", g.JTI, err)
	}
	return nil
}

// Synced implements admission.Cache.
func (c *Cache) Synced(ctx context.Context) (bool, error) {
	n, err := c.rdb.Exists(ctx, rediskey.QueueSynced).Result()
	if err != nil {
		return false, fmt.Errorf("admission/redis: synced: %w", err)
	}
	return n == 1, nil
}

// MarkSynced implements admission.Cache.
func (c *Cache) MarkSynced(ctx context.Context) error {
	if err := c.rdb.Set(ctx, rediskey.QueueSynced, "1", 0).Err(); err != nil {
		return fmt.Errorf("admission/redis: mark synced: %w", err)
	}
	return nil
}

// Changes delivers the show ids announced on rediskey.QueueConfigEvents until ctx ends.
func (c *Cache) Changes(ctx context.Context) <-chan string {
	return Subscribe(ctx, c.rdb, rediskey.QueueConfigEvents)
}

// Subscribe delivers the payloads published on channels until ctx ends (driver.Listen, which survives a dropped
// connection). A slow reader loses messages rather than holding up the subscription: every reader here also
// refreshes on its own within a second or a tick, which covers what a dropped connection loses too.
func Subscribe(ctx context.Context, rdb goredis.UniversalClient, channels ...string) <-chan string {
	out := make(chan string, 256)
	go func() {
		defer close(out)
		driver.Listen(ctx, rdb, driver.Listener{Channels: channels, Message: func(m *goredis.Message) {
			select {
			case out <- m.Payload:
			default:
			}
		}})
	}()
	return out
}
