// Package redis is booking's Redis (go-redis/v9): the seat locks that decide who holds a seat right now, the
// mirror of the sold seats, the fencing counter, per-show counters, ShowInfo and the seat events. Every key of a
// show carries its hash tag (shared/rediskey) and every Lua script touches one show's keys only, so the same code
// runs on a single Redis and on Redis Cluster. The scripts sit beside this file and are embedded.
package redis

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/rediskey"
)

var (
	//go:embed hold.lua
	holdLua    string
	holdScript = redis.NewScript(holdLua)
	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
	//go:embed extend.lua
	extendLua    string
	extendScript = redis.NewScript(extendLua)
	//go:embed epoch.lua
	epochLua    string
	epochScript = redis.NewScript(epochLua)
	//go:embed locks.lua
	locksLua    string
	locksScript = redis.NewScript(locksLua)
)

// Keys booking keeps beside the shared scheme, under the same hash tag.
func userHoldsKey(showID, userID string) string {
	return rediskey.Tag(showID) + ":user-holds:" + userID
}
func countersKey(showID string) string { return rediskey.Tag(showID) + ":counters" }

// SoldKey is the set mirroring the show's sold seats from the ledger, so a hold of a sold seat fails in the same
// script that claims, and the seat map reads sold seats in the same round trip as the locks.
func SoldKey(showID string) string { return rediskey.Tag(showID) + ":sold" }

// Locks implements booking.Seats.
type Locks struct {
	rdb redis.UniversalClient
}

// New returns Locks on rdb.
func New(rdb redis.UniversalClient) *Locks { return &Locks{rdb: rdb} }

var _ booking.Seats = (*Locks)(nil)

func lockValue(b booking.Booking) string { return b.ID + "|" + strconv.FormatInt(b.Fence, 10) }

func holdsMember(b booking.Booking) string { return b.ID + "|" + strconv.Itoa(len(b.SeatIDs)) }

func seatKeys(showID string, seatIDs []string) []string {
	keys := make([]string, len(seatIDs))
	for i, id := range seatIDs {
		keys[i] = rediskey.Seat(showID, id)
	}
	return keys
}

// Claim runs hold.lua.
func (l *Locks) Claim(ctx context.Context, c booking.Claim) (booking.ClaimResult, error) {
	keys := append([]string{rediskey.Epoch(c.ShowID), rediskey.Fence(c.ShowID), userHoldsKey(c.ShowID, c.UserID),
		countersKey(c.ShowID), SoldKey(c.ShowID)}, seatKeys(c.ShowID, c.SeatIDs)...)
	args := make([]any, 0, 6+len(c.SeatIDs))
	args = append(args, c.BookingID, c.TTL.Milliseconds(), c.Now.UnixMilli(), c.UserCap, rediskey.SeatEvents(c.ShowID))
	for _, id := range c.SeatIDs {
		args = append(args, id)
	}
	if c.Resale {
		args = append(args, "1")
	}
	res, err := holdScript.Run(ctx, l.rdb, keys, args...).Slice()
	if err != nil {
		return booking.ClaimResult{}, fmt.Errorf("redis: claim: %w", err)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		s, _ := res[1].(string)
		fence, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return booking.ClaimResult{}, fmt.Errorf("redis: claim: fence %q: %w", s, err)
		}
		return booking.ClaimResult{OK: true, Fence: fence}, nil
	case 0:
		taken := make([]string, 0, len(res)-1)
		for _, v := range res[1:] {
			s, _ := v.(string)
			taken = append(taken, s)
		}
		return booking.ClaimResult{Taken: taken}, nil
	case -1:
		return booking.ClaimResult{NoEpoch: true}, nil
	case -2:
		return booking.ClaimResult{OverCap: true}, nil
	}
	return booking.ClaimResult{}, fmt.Errorf("redis: claim: unexpected reply %v", res)
}

// SetEpoch runs epoch.lua.
func (l *Locks) SetEpoch(ctx context.Context, showID string, epoch int64, sold []string) error {
	args := make([]any, 0, 1+len(sold))
	args = append(args, epoch)
	for _, id := range sold {
		args = append(args, id)
	}
	err := epochScript.Run(ctx, l.rdb, []string{rediskey.Epoch(showID), rediskey.Fence(showID), SoldKey(showID)},
		args...).Err()
	if err != nil {
		return fmt.Errorf("redis: set epoch: %w", err)
	}
	return nil
}

// DropEpoch deletes the show's epoch key.
func (l *Locks) DropEpoch(ctx context.Context, showID string) error {
	if err := l.rdb.Del(ctx, rediskey.Epoch(showID)).Err(); err != nil {
		return fmt.Errorf("redis: drop epoch: %w", err)
	}
	return nil
}

func (l *Locks) release(ctx context.Context, b booking.Booking, status booking.SeatStatus) ([]string, error) {
	keys := append([]string{userHoldsKey(b.ShowID, b.UserID), SoldKey(b.ShowID)}, seatKeys(b.ShowID, b.SeatIDs)...)
	args := make([]any, 0, 4+len(b.SeatIDs))
	args = append(args, lockValue(b), holdsMember(b), rediskey.SeatEvents(b.ShowID), string(status))
	for _, id := range b.SeatIDs {
		args = append(args, id)
	}
	freed, err := releaseScript.Run(ctx, l.rdb, keys, args...).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis: release: %w", err)
	}
	if freed == nil {
		freed = []string{}
	}
	return freed, nil
}

// Release runs release.lua, publishing the freed seats as AVAILABLE.
func (l *Locks) Release(ctx context.Context, b booking.Booking) ([]string, error) {
	return l.release(ctx, b, booking.SeatAvailable)
}

// Sell runs release.lua in its selling mode: the seats join the sold set and are published as BOOKED.
func (l *Locks) Sell(ctx context.Context, b booking.Booking) error {
	_, err := l.release(ctx, b, booking.SeatBooked)
	return err
}

// Unsell takes refunded seats out of the sold set and publishes them as AVAILABLE.
func (l *Locks) Unsell(ctx context.Context, b booking.Booking) error {
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range b.SeatIDs {
			p.SRem(ctx, SoldKey(b.ShowID), id)
			p.Publish(ctx, rediskey.SeatEvents(b.ShowID), seatEvent(id, booking.SeatAvailable))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: unsell: %w", err)
	}
	return nil
}

func seatEvent(id string, st booking.SeatStatus) string {
	b, _ := json.Marshal(booking.SeatEvent{SeatID: id, Status: st})
	return string(b)
}

// Owned reads b's locks in one MGET.
func (l *Locks) Owned(ctx context.Context, b booking.Booking) (bool, error) {
	vals, err := l.rdb.MGet(ctx, seatKeys(b.ShowID, b.SeatIDs)...).Result()
	if err != nil {
		return false, fmt.Errorf("redis: owned: %w", err)
	}
	want := lockValue(b)
	for _, v := range vals {
		if s, _ := v.(string); s != want {
			return false, nil
		}
	}
	return true, nil
}

// Extend runs extend.lua.
func (l *Locks) Extend(ctx context.Context, b booking.Booking, ttl time.Duration) (bool, error) {
	n, err := extendScript.Run(ctx, l.rdb, seatKeys(b.ShowID, b.SeatIDs), lockValue(b), ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("redis: extend: %w", err)
	}
	if n == 1 {
		// The user's cap entry lives as long as the hold.
		l.rdb.ZAdd(ctx, userHoldsKey(b.ShowID, b.UserID), redis.Z{Score: float64(time.Now().Add(ttl).UnixMilli()),
			Member: holdsMember(b)})
	}
	return n == 1, nil
}

// Status reads the seats' locks and the sold set in one round trip (a pipeline of MGET and SMEMBERS on one
// slot).
func (l *Locks) Status(ctx context.Context, showID string, seatIDs []string) (map[string]bool, map[string]bool, error) {
	var mget *redis.SliceCmd
	var members *redis.StringSliceCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		mget = p.MGet(ctx, seatKeys(showID, seatIDs)...)
		members = p.SMembers(ctx, SoldKey(showID))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("redis: seat status: %w", err)
	}
	held := make(map[string]bool)
	for i, v := range mget.Val() {
		if v != nil {
			held[seatIDs[i]] = true
		}
	}
	sold := make(map[string]bool, len(members.Val()))
	for _, id := range members.Val() {
		sold[id] = true
	}
	return held, sold, nil
}

// seatLocksBatch is how many locks one run of locks.lua reads: a big hall is read in several short scripts
// rather than one that keeps Redis from everyone else for long.
const seatLocksBatch = 1000

// SeatLocks runs locks.lua over the seats' lock keys, seatLocksBatch at a time. The keys are named from the
// show's seats rather than found by SCAN, whose cost grows with the whole keyspace (every fan's keys) and not
// with the hall; they share the show's hash slot, so each batch is one script on a cluster too.
func (l *Locks) SeatLocks(ctx context.Context, showID string, seatIDs []string) ([]booking.SeatLock, error) {
	var out []booking.SeatLock
	for start := 0; start < len(seatIDs); start += seatLocksBatch {
		batch := seatIDs[start:min(start+seatLocksBatch, len(seatIDs))]
		res, err := locksScript.Run(ctx, l.rdb, seatKeys(showID, batch)).Slice()
		if err != nil { // locks.lua always answers a table, empty when no seat is locked
			return nil, fmt.Errorf("redis: seat locks: %w", err)
		}
		for i := 0; i+2 < len(res); i += 3 {
			n, _ := res[i].(int64)
			v, _ := res[i+1].(string)
			ttl, _ := res[i+2].(int64)
			if n < 1 || int(n) > len(batch) {
				return nil, fmt.Errorf("redis: seat locks: unexpected reply %v", res[i:i+3])
			}
			id, f, ok := strings.Cut(v, "|")
			fence, err := strconv.ParseInt(f, 10, 64)
			if !ok || err != nil {
				// Not a lock this code wrote: leave it to its TTL rather than guess whose it is.
				continue
			}
			lock := booking.SeatLock{SeatID: batch[n-1], BookingID: id, Fence: fence, TTL: -1}
			if ttl >= 0 {
				lock.TTL = time.Duration(ttl) * time.Millisecond
			}
			out = append(out, lock)
		}
	}
	return out, nil
}

// Sold reads the sold set.
func (l *Locks) Sold(ctx context.Context, showID string) ([]string, error) {
	ids, err := l.rdb.SMembers(ctx, SoldKey(showID)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: sold seats: %w", err)
	}
	return ids, nil
}

// AddSold adds seats to the sold set.
func (l *Locks) AddSold(ctx context.Context, showID string, seatIDs []string) error {
	if len(seatIDs) == 0 {
		return nil
	}
	m := make([]any, len(seatIDs))
	for i, id := range seatIDs {
		m[i] = id
	}
	if err := l.rdb.SAdd(ctx, SoldKey(showID), m...).Err(); err != nil {
		return fmt.Errorf("redis: add sold: %w", err)
	}
	return nil
}

// Available pipelines an HGET of each show's available count.
func (l *Locks) Available(ctx context.Context, showIDs []string) (map[string]int, error) {
	cmds := make([]*redis.StringCmd, len(showIDs))
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range showIDs {
			cmds[i] = p.HGet(ctx, rediskey.ShowInfo(id), rediskey.InfoAvailable)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis: available: %w", err)
	}
	out := make(map[string]int, len(showIDs))
	for i, c := range cmds {
		if n, err := strconv.Atoi(c.Val()); err == nil {
			out[showIDs[i]] = n
		}
	}
	return out, nil
}

// PublishInfo writes ShowInfo and, if announce, publishes the show on rediskey.AvailabilityEvents.
func (l *Locks) PublishInfo(ctx context.Context, s booking.Show, c booking.Counts, now time.Time, announce bool) error {
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, rediskey.ShowInfo(s.ID),
			rediskey.InfoSaleStartsAt, s.SaleStartsAt.UnixMilli(),
			rediskey.InfoStartsAt, s.StartsAt.UnixMilli(),
			rediskey.InfoTotalSeats, c.Total,
			rediskey.InfoAvailable, c.Available,
			rediskey.InfoHeld, c.Held,
			rediskey.InfoBooked, c.Booked,
			rediskey.InfoUpdatedAt, now.UnixMilli(),
			rediskey.InfoClosed, closedFlag(s))
		if announce {
			p.Publish(ctx, rediskey.AvailabilityEvents, s.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: publish show info: %w", err)
	}
	return nil
}

func closedFlag(s booking.Show) string {
	if s.SaleClosedAt.IsZero() {
		return "0"
	}
	return "1"
}

// AnnounceShow publishes the show on rediskey.ShowEvents (WatchShows).
func (l *Locks) AnnounceShow(ctx context.Context, showID string) error {
	if err := l.rdb.Publish(ctx, rediskey.ShowEvents, showID).Err(); err != nil {
		return fmt.Errorf("redis: announce show: %w", err)
	}
	return nil
}

// WatchShows calls fn with the id of every show an operator changed (AnnounceShow), until ctx ends.
func WatchShows(ctx context.Context, rdb redis.UniversalClient, fn func(showID string)) {
	driver.Listen(ctx, rdb, driver.Listener{Channels: []string{rediskey.ShowEvents},
		Message: func(m *redis.Message) { fn(m.Payload) }})
}

// PublishSeats announces seat changes.
func (l *Locks) PublishSeats(ctx context.Context, showID string, evs []booking.SeatEvent) error {
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range evs {
			p.Publish(ctx, rediskey.SeatEvents(showID), seatEvent(e.SeatID, e.Status))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: publish seats: %w", err)
	}
	return nil
}

// AddConflicts adds to the show's conflict counter.
func (l *Locks) AddConflicts(ctx context.Context, showID string, n int64) error {
	if err := l.rdb.HIncrBy(ctx, countersKey(showID), "conflicts", n).Err(); err != nil {
		return fmt.Errorf("redis: count conflicts: %w", err)
	}
	return nil
}

// Counters reads the show's hold and conflict counters.
func (l *Locks) Counters(ctx context.Context, showID string) (int64, int64, error) {
	vals, err := l.rdb.HMGet(ctx, countersKey(showID), "holds", "conflicts").Result()
	if err != nil {
		return 0, 0, fmt.Errorf("redis: counters: %w", err)
	}
	n := func(v any) int64 { s, _ := v.(string); i, _ := strconv.ParseInt(s, 10, 64); return i }
	return n(vals[0]), n(vals[1]), nil
}

// ParseSeatKey splits a seat lock key into show and seat ids; ok is false for any other key.
func ParseSeatKey(key string) (showID, seatID string, ok bool) {
	rest, ok := strings.CutPrefix(key, "{show:")
	if !ok {
		return "", "", false
	}
	showID, seatID, ok = strings.Cut(rest, "}:seat:")
	return showID, seatID, ok && showID != "" && seatID != ""
}
