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
	k, err := s.parts(ctx, show)
	if err != nil {
		return waitroom.TickResult{}, err
	}
	if k > 1 {
		return s.admitLines(ctx, show, k, nonce, grace, maxScan)
	}
	snap, _, err := s.admitLine(ctx, show, lineStep{nonce: nonce, grace: grace, maxScan: maxScan, forced: -1})
	return snap, err
}

// lineStep is one run of admit.lua on a line: a single queue's whole tick, or a partitioned queue's step on one
// of its lines (lines.go).
type lineStep struct {
	nonce   string
	grace   time.Duration
	maxScan int
	forced  int   // the fans to admit (-1: the script's own budget)
	upto    int64 // with forced, the last ticket the merge chose from the line (0: none)
	heads   int   // the next tickets to answer
	marksOf int64 // answer the marks above this ticket (-1: none)
}

// lineReply is what a step answers beside its tick: the line's next tickets, its new marks and the fans skipped.
type lineReply struct {
	heads   []int64
	marks   []waitroom.Mark
	skipped int
}

// admitLine runs admit.lua on line (a show, or one line of it).
func (s *Store) admitLine(ctx context.Context, line string, st lineStep) (waitroom.TickResult, lineReply, error) {
	keys := []string{rediskey.QueueConfig(line), rediskey.ShowInfo(line), State(line), Wait(line), Pre(line),
		Heartbeat(line), Grants(line), rediskey.QueueActive(line), GrantExp(line), JTI(line), Unrecorded(line),
		Skipped(line), BotStats(line), Marks(line)}
	var lr lineReply
	r, err := admitScript.Run(ctx, s.rdb, keys, st.nonce, st.grace.Milliseconds(), st.maxScan,
		overdueAfter.Milliseconds(), st.forced, st.heads, st.marksOf, st.upto).Slice()
	if err != nil {
		return waitroom.TickResult{}, lr, storeErr("admit", err)
	}
	show := line
	if len(r) == 1 {
		switch str(r[0]) {
		case "unknown":
			return waitroom.TickResult{}, lr, waitroom.ErrNoSettings
		case "restore":
			return waitroom.TickResult{}, lr, lineErr(line, waitroom.ErrNoState)
		}
	}
	if len(r) < 21 {
		return waitroom.TickResult{}, lr, fmt.Errorf("waitroom/redis: admit: short reply %v", r)
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
	heads, _ := r[18].([]any)
	for i := 1; i < len(heads); i += 2 {
		lr.heads = append(lr.heads, num(heads[i]))
	}
	marks, _ := r[19].([]any)
	for i := 0; i+1 < len(marks); i += 2 {
		lr.marks = append(lr.marks, waitroom.Mark{At: num(marks[i]), Seq: num(marks[i+1])})
	}
	lr.skipped = int(num(r[20]))
	return snap, lr, nil
}

// SaveTokens implements waitroom.Store (tokens.lua), on each grant's line. A partitioned queue's durable
// cursors are its lines' (the next tick reads them): it answers 0.
func (s *Store) SaveTokens(ctx context.Context, show string, grants []waitroom.Grant) (int64, error) {
	byLine := map[string][]any{}
	for _, g := range grants {
		line := rediskey.LineOfJTI(show, g.JTI)
		byLine[line] = append(byLine[line], g.UserID, g.JTI, g.Token)
	}
	var durable int64
	for line, args := range byLine {
		d, err := tokensScript.Run(ctx, s.rdb, []string{Grants(line), Unrecorded(line), State(line)}, args...).Int64()
		if err != nil {
			return 0, storeErr("save tokens", err)
		}
		if line == show && len(byLine) == 1 {
			durable = d
		}
	}
	return durable, nil
}

// byLine groups users by their line of show (its index among k; linesOf): one group, the show's, for a single
// queue.
func (s *Store) byLine(ctx context.Context, show string, users []string) (int, map[int][]string, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return 0, nil, err
	}
	if k <= 1 {
		return k, map[int][]string{0: users}, nil
	}
	out, err := s.linesOf(ctx, show, k, users)
	return k, out, err
}

// Lines implements waitroom.Store.
func (s *Store) Lines(ctx context.Context, show string, users []string) (map[string][]string, error) {
	k, groups, err := s.byLine(ctx, show, users)
	out := make(map[string][]string, len(groups))
	for p, us := range groups {
		out[rediskey.Line(show, p, k)] = us
	}
	return out, err
}

// Grants implements waitroom.Store: live grants only.
func (s *Store) Grants(ctx context.Context, show string, users []string) (map[string]waitroom.Grant, error) {
	out := map[string]waitroom.Grant{}
	if len(users) == 0 {
		return out, nil
	}
	k, groups, err := s.byLine(ctx, show, users)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for p, us := range groups {
		vals, err := s.rdb.HMGet(ctx, Grants(rediskey.Line(show, p, k)), us...).Result()
		if err != nil {
			return nil, storeErr("grants", err)
		}
		for i, v := range vals {
			sv, ok := v.(string)
			if !ok {
				continue
			}
			g, err := parseGrant(us[i], sv)
			if err != nil || !g.ExpiresAt.After(now) {
				continue
			}
			out[us[i]] = g
		}
	}
	return out, nil
}

// Seqs implements waitroom.Store: a partitioned queue's tickets name their line (waitroom.Ticket).
func (s *Store) Seqs(ctx context.Context, show string, users []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(users) == 0 {
		return out, nil
	}
	k, groups, err := s.byLine(ctx, show, users)
	if err != nil {
		return nil, err
	}
	for p, us := range groups {
		vals, err := s.rdb.ZMScore(ctx, Wait(rediskey.Line(show, p, k)), us...).Result()
		if err != nil {
			return nil, storeErr("seqs", err)
		}
		for i, v := range vals {
			if v > 0 {
				out[us[i]] = waitroom.Ticket(k, p, int64(v))
			}
		}
	}
	return out, nil
}
