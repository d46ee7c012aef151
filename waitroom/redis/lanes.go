package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// Lanes (admission.Lanes) are lines of their own: a show of L lanes and K partitions has L·K lines, lane i's being
// lines i·K to i·K+K-1, and QueuePartitions holds L·K. So everything that already works per line (the scripts,
// tickets naming their line, jti prefixes, receipts, streams, the guard's per-fan keys, restoring a lost line
// from the record, the refusal of a changed count, join.lua's "moved") works for lanes unchanged: only the
// choice of a fan's line (lineOf) and the tick's split of its budget (splitLanes) know about lanes.
//
// A fan's lane is read from the store at each routing, never remembered here: the lane they are held to
// (rediskey.FanLane: a bypass code's, or the lane of their first join, written then), else their invitation's
// (rediskey.Invitation), else the general lane; both hashes share a hash tag, so it is one pipelined round trip,
// and none at all for a show without lanes. After a Redis loss the hashes may be gone (the invitations' copy is
// rebuilt by its writer); a fan presenting their place receipt, which names their line and is MACed, is put back
// in that line's lane (joinOnce, receiptLine).

var (
	//go:embed lane.lua
	laneLua    string
	laneScript = goredis.NewScript(laneLua)
)

// lanesOf is the lanes this replica read with show's line count k (parts); none when the count has moved since.
func (s *Store) lanesOf(show string, k int) admission.Lanes {
	s.lines.mu.RLock()
	e, ok := s.lines.parts[show]
	s.lines.mu.RUnlock()
	if !ok || e.k != k {
		return admission.Lanes{}
	}
	return e.lanes
}

// lineOf is user's line of show among its k lines, and its index: their lane's lines, then their partition.
func (s *Store) lineOf(ctx context.Context, show, user string, k int) (string, int, error) {
	line, p, _, err := s.route(ctx, show, user, k, false)
	return line, p, err
}

// route is lineOf, and whether the fan was held to their lane already (rediskey.FanLane; a show without lanes
// holds everyone to its one lane); with hold (a join), the fan is held to it from now on (lane.lua).
func (s *Store) route(ctx context.Context, show, user string, k int, hold bool) (string, int, bool, error) {
	lanes := s.lanesOf(show, k)
	lane, held := 0, true
	if lanes.Count() > 1 {
		flag := "0"
		if hold {
			flag = "1"
		}
		r, err := laneScript.Run(ctx, s.rdb, []string{rediskey.FanLane(show, user), rediskey.Invitation(show, user)},
			user, flag).StringSlice()
		if err != nil {
			return "", 0, false, storeErr("lane", err)
		}
		if len(r) != 2 {
			return "", 0, false, fmt.Errorf("waitroom/redis: lane: unexpected reply %v", r)
		}
		lane, held = lanes.Index(r[0]), r[1] == "1"
	}
	p := laneIndex(user, k, lanes, lane)
	return rediskey.Line(show, p, k), p, held, nil
}

// receiptLine is the line of a receipt's ticket (its index rp among k) for a fan not held to a lane, when it is
// the fan's own partition in another lane: their lane's record was lost with Redis, and the receipt, which the
// service has verified, says which lane they waited in. -1 otherwise.
func (s *Store) receiptLine(show, user string, k, rp int) int {
	lanes := s.lanesOf(show, k)
	per := k / lanes.Count()
	if lanes.Count() <= 1 || rp < 0 || rp >= k || rp%per != rediskey.PartitionOf(user, per) {
		return -1
	}
	return rp
}

// laneName is the name of the lane of line p among show's k lines ("" without lanes).
func (s *Store) laneName(show string, k, p int) string {
	list := s.lanesOf(show, k).List()
	if len(list) <= 1 {
		return ""
	}
	return list[p/(k/len(list))].Name
}

// laneLine is user's line in lane of show's k lines.
func laneLine(show, user string, k int, lanes admission.Lanes, lane int) string {
	return rediskey.Line(show, laneIndex(user, k, lanes, lane), k)
}

// laneIndex is the index of user's line in lane among k: the lane's lines, then the fan's partition among them.
func laneIndex(user string, k int, lanes admission.Lanes, lane int) int {
	per := k / lanes.Count()
	return lane*per + rediskey.PartitionOf(user, per)
}

// laneIndexes is each user's lane among lanes (admission.Lanes.Index), and whether they are held to it, one
// pipeline for them all.
func (s *Store) laneIndexes(ctx context.Context, show string, lanes admission.Lanes, users []string) ([]int, []bool, error) {
	held := make([]*goredis.StringCmd, len(users))
	invited := make([]*goredis.StringCmd, len(users))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, u := range users {
			held[i] = p.HGet(ctx, rediskey.FanLane(show, u), u)
			invited[i] = p.HGet(ctx, rediskey.Invitation(show, u), u)
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, nil, storeErr("lanes", err)
	}
	out, isHeld := make([]int, len(users)), make([]bool, len(users))
	for i := range users {
		name, err := held[i].Result()
		isHeld[i] = err == nil
		if errors.Is(err, goredis.Nil) {
			name, err = invited[i].Result()
		}
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, nil, storeErr("lanes", err)
		}
		out[i] = lanes.Index(name)
	}
	return out, isHeld, nil
}

// SetLane implements waitroom.Store: user is in lane from now on, as a bypass code names it. The caller has
// made sure the fan holds no ticket elsewhere (a fan in line keeps their line).
func (s *Store) SetLane(ctx context.Context, show, user, lane string) error {
	if err := s.rdb.HSet(ctx, rediskey.FanLane(show, user), user, lane).Err(); err != nil {
		return storeErr("set lane", err)
	}
	return nil
}

// linesOf groups users by their line of show among k: for each line's index, its users in their order.
func (s *Store) linesOf(ctx context.Context, show string, k int, users []string) (map[int][]string, error) {
	lanes := s.lanesOf(show, k)
	per := k / lanes.Count()
	var idx []int
	if lanes.Count() > 1 {
		var err error
		if idx, _, err = s.laneIndexes(ctx, show, lanes, users); err != nil {
			return nil, err
		}
	}
	out := map[int][]string{}
	for i, u := range users {
		p := rediskey.PartitionOf(u, per)
		if idx != nil {
			p += idx[i] * per
		}
		out[p] = append(out[p], u)
	}
	return out, nil
}

// withLanes sets each line's lane and the lane's part of the rate among the lanes with fans waiting (Line.Lane,
// Line.Share), from the lines' own figures, so every replica's positions and ETAs see the same lanes.
func withLanes(ls waitroom.Lines, lanes admission.Lanes) {
	list := lanes.List()
	if len(list) <= 1 || len(ls)%len(list) != 0 {
		return
	}
	per := len(ls) / len(list)
	waiting := make([]int64, len(list))
	for p, l := range ls {
		waiting[p/per] += l.Waiting
	}
	sum := 0.0
	for i, w := range waiting {
		if w > 0 {
			sum += list[i].Share
		}
	}
	for p := range ls {
		i := p / per
		ls[p].Lane, ls[p].Share = i, list[i].Share
		if sum > 0 && waiting[i] > 0 {
			ls[p].Share = list[i].Share / sum
		}
	}
}

// laneCredit is the field of the show's state holding the lanes' credit between ticks (waitroom.EarnLanes), so
// whichever replica holds the next tick's lock goes on from it.
const laneCredit = "laneCredit"

// laneTick is one tick's split of the show's budget between its lanes.
type laneTick struct {
	per     int // lines per lane
	credit  []float64
	waiting []int64
	granted []int
}

// openLanes starts a tick's split of budget n between show's lanes, from the lines' first step (out): nil for a
// show without lanes.
func (s *Store) openLanes(ctx context.Context, show string, k int, out []stepped, n int) (*laneTick, error) {
	list := s.lanesOf(show, k).List()
	if len(list) <= 1 {
		return nil, nil
	}
	t := &laneTick{per: k / len(list), waiting: make([]int64, len(list)), granted: make([]int, len(list))}
	for p, o := range out {
		t.waiting[p/t.per] += o.snap.Waiting
	}
	v, err := s.rdb.HGet(ctx, State(show), laneCredit).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, storeErr("lane credit", err)
	}
	credit := make([]float64, len(list))
	if f := strings.Split(v, ","); len(f) == len(list) {
		for i := range f {
			credit[i], _ = strconv.ParseFloat(f[i], 64)
		}
	}
	shares := make([]float64, len(list))
	for i, l := range list {
		shares[i] = l.Share
	}
	t.credit = waitroom.EarnLanes(n, shares, t.waiting, credit)
	return t, nil
}

// merge is a round's merge for n fans: split between the lanes by credit, then each lane's part merged over its
// own lines by arrival order, as a show without lanes merges all its lines.
func (t *laneTick) merge(order waitroom.Lines, out []stepped, heads, n int) *merged {
	left, avail := make([]float64, len(t.credit)), make([]int64, len(t.credit))
	for i := range t.credit {
		left[i] = t.credit[i] - float64(t.granted[i])
		avail[i] = t.waiting[i] - int64(t.granted[i])
	}
	m := &merged{take: make([]int, len(out)), upto: make([]int64, len(out))}
	for i, a := range waitroom.SplitLanes(n, left, avail) {
		if a > 0 {
			m.add(order[i*t.per:(i+1)*t.per], out, heads, a, i*t.per)
		}
	}
	return m
}

// admitted counts n fans admitted from line p.
func (t *laneTick) admitted(p, n int) {
	if t != nil {
		t.granted[p/t.per] += n
	}
}

// closeLanes ends a tick's split: each lane's credit less what it admitted, kept for the next tick.
func (s *Store) closeLanes(ctx context.Context, show string, t *laneTick) error {
	if t == nil {
		return nil
	}
	c := waitroom.ChargeLanes(t.credit, t.granted)
	f := make([]string, len(c))
	for i, x := range c {
		f[i] = strconv.FormatFloat(x, 'f', 4, 64)
	}
	if err := s.rdb.HSet(ctx, State(show), laneCredit, strings.Join(f, ",")).Err(); err != nil {
		return storeErr("lane credit", err)
	}
	return nil
}
