package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// A partitioned queue (QueueConfig's "partitions" K > 1) is K lines, each a whole queue under its own hash tag
// (rediskey.Line): every script here runs unchanged on one line's keys. What is the show's, not a line's, lives
// here:
//   - a fan's line is rediskey.PartitionOf their id, and their ticket carries the line (waitroom.Ticket);
//   - each line keeps copies of the show's QueueConfig and ShowInfo, which syncLines writes at each tick (and a
//     join that finds none, at once), so a line's join reads its settings on its own master;
//   - the tick (admitLines) spends one rate budget and one active cap for the show: under the show's tick lock
//     it steps every line (admit.lua with a count of 0: expired grants, overdue recordings, the line's next
//     tickets and new marks), takes the show's budget (budget.lua, on the show's own slot), merges the lines'
//     heads in the show's order (waitroom.Lines.Order) and admits each line's share, again for fans skipped
//     as absent; a replica without the lock only steps the lines, for its streams;
//   - positions come from each line's arrival marks, which this replica mirrors in memory (views).

var (
	//go:embed budget.lua
	budgetLua    string
	budgetScript = goredis.NewScript(budgetLua)
	//go:embed unlock.lua
	unlockLua    string
	unlockScript = goredis.NewScript(unlockLua)
)

// partsFresh is how long a replica trusts its copy of a show's partition count: the count changes only while
// nobody waits (the settings refuse it otherwise), so a second's lag moves nobody.
const partsFresh = time.Second

type partsEntry struct {
	k  int
	at time.Time
}

// lines is the replica's memory of partitioned shows: their counts, and each show's view of its lines.
type lines struct {
	mu    sync.Mutex
	parts map[string]partsEntry
	views map[string]*lineView
}

// lineView is a show's lines as this replica last stepped them, and the settings last copied to them.
type lineView struct {
	mu         sync.Mutex
	k          int
	lines      waitroom.Lines
	copied     string // the show's settings and info as last copied to the lines
	copiedAt   time.Time
	at         time.Time // when the lines were last read
	refreshing bool
}

// maxLineShows bounds the memory of lines: shows on sale at once, with room to spare.
const maxLineShows = 4096

// parts is show's partition count (1: a single queue).
func (s *Store) parts(ctx context.Context, show string) (int, error) {
	s.lines.mu.Lock()
	e, ok := s.lines.parts[show]
	s.lines.mu.Unlock()
	if ok && time.Since(e.at) < partsFresh {
		return e.k, nil
	}
	v, err := s.rdb.HGet(ctx, rediskey.QueueConfig(show), rediskey.QueuePartitions).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, storeErr("partitions", err)
	}
	k, _ := strconv.Atoi(v)
	k = min(max(k, 1), rediskey.MaxPartitions)
	s.lines.mu.Lock()
	if len(s.lines.parts) >= maxLineShows {
		clear(s.lines.parts)
	}
	s.lines.parts[show] = partsEntry{k: k, at: time.Now()}
	s.lines.mu.Unlock()
	return k, nil
}

// forgetParts drops this replica's memory of show's partition count.
func (s *Store) forgetParts(show string) {
	s.lines.mu.Lock()
	delete(s.lines.parts, show)
	s.lines.mu.Unlock()
}

// lineOf is user's line of show among k, and its index.
func (s *Store) lineOf(show, user string, k int) (string, int) {
	p := rediskey.PartitionOf(user, k)
	return rediskey.Line(show, p, k), p
}

// JTIPrefix implements waitroom.Store: what an admission's token id starts with, so booking finds the line's
// active admissions from it (rediskey.ActiveFor).
func (s *Store) JTIPrefix(ctx context.Context, show, user string) (string, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return "", err
	}
	line, _ := s.lineOf(show, user, k)
	return rediskey.JTIPrefix(line), nil
}

// lineErr says which line asks to be restored or reserved; other errors pass unchanged.
func lineErr(line string, err error) error {
	var seqs *waitroom.SeqsError
	if errors.Is(err, waitroom.ErrNoState) || errors.As(err, &seqs) {
		return &waitroom.LineError{Line: line, Err: err}
	}
	return err
}

// view is show's view of its k lines, created empty.
func (s *Store) view(show string, k int) *lineView {
	s.lines.mu.Lock()
	defer s.lines.mu.Unlock()
	v, ok := s.lines.views[show]
	if !ok || v.k != k {
		if len(s.lines.views) >= maxLineShows {
			clear(s.lines.views)
		}
		v = &lineView{k: k, lines: make(waitroom.Lines, k)}
		for p := range v.lines {
			v.lines[p].ID = rediskey.Line(show, p, k)
		}
		s.lines.views[show] = v
	}
	return v
}

// syncLine copies the show's settings and info to one line; ErrNoSettings when the show has none.
func (s *Store) syncLine(ctx context.Context, show, line string) error {
	cfg, info, err := s.showCopy(ctx, show)
	if err != nil {
		return err
	}
	return s.writeCopies(ctx, []string{line}, cfg, info)
}

// showCopy reads what the lines copy of the show.
func (s *Store) showCopy(ctx context.Context, show string) (cfg, info map[string]string, err error) {
	p := s.rdb.Pipeline()
	c := p.HGetAll(ctx, rediskey.QueueConfig(show))
	i := p.HGetAll(ctx, rediskey.ShowInfo(show))
	if _, err := p.Exec(ctx); err != nil {
		return nil, nil, storeErr("line copy", err)
	}
	if len(c.Val()) == 0 {
		return nil, nil, waitroom.ErrNoSettings
	}
	return c.Val(), i.Val(), nil
}

// writeCopies replaces each line's copies with cfg and info, each in one MULTI on its line's slot.
func (s *Store) writeCopies(ctx context.Context, lines []string, cfg, info map[string]string) error {
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, l := range lines {
			if l == rediskey.ShowOf(l) {
				continue // the show's own
			}
			for key, h := range map[string]map[string]string{rediskey.QueueConfig(l): cfg, rediskey.ShowInfo(l): info} {
				p.Del(ctx, key)
				if len(h) > 0 {
					p.HSet(ctx, key, h)
				}
			}
		}
		return nil
	})
	if err != nil {
		return storeErr("line copy", err)
	}
	return nil
}

// syncLines copies the show's settings and info to every line when they changed since this replica last did, or
// a second later (a line that lost its copies gets them back).
func (s *Store) syncLines(ctx context.Context, show string, v *lineView) error {
	cfg, info, err := s.showCopy(ctx, show)
	if err != nil {
		return err
	}
	sig := fmt.Sprint(cfg, info)
	v.mu.Lock()
	due := sig != v.copied || time.Since(v.copiedAt) >= time.Second
	v.mu.Unlock()
	if !due {
		return nil
	}
	if err := s.writeCopies(ctx, rediskey.Lines(show, v.k), cfg, info); err != nil {
		return err
	}
	v.mu.Lock()
	v.copied, v.copiedAt = sig, time.Now()
	v.mu.Unlock()
	return nil
}

// inLines completes a line's entry with the show's lines: the ticket that names the line, and this replica's
// view of the others for the position.
func (s *Store) inLines(ctx context.Context, show string, k, p int, e waitroom.Entry) (waitroom.Entry, error) {
	if e.Seq <= 0 {
		return e, nil
	}
	v := s.view(show, k)
	if err := s.refreshView(ctx, show, v); err != nil {
		return e, err
	}
	v.mu.Lock()
	ls := append(waitroom.Lines(nil), v.lines...)
	v.mu.Unlock()
	ls[p].Cursor, ls[p].Gap = e.Cursor, e.Gap
	ls[p].LastSeq = max(ls[p].LastSeq, e.Seq)
	e.Seq, e.Lines = waitroom.Ticket(k, p, e.Seq), ls
	return e, nil
}

// viewFresh is how old a view may be when a join answers from it: other lines' fans who joined since are not
// counted ahead (they came within the order's bound of this fan, and a stream's next tick counts them).
const viewFresh = 50 * time.Millisecond

// refreshView reads every line's cursor, last ticket and new marks into the view when it is older than
// viewFresh (a replica that streams the show steps its lines at every tick, which keeps it fresh): one pipeline,
// a read on each line. One refresh at a time per view; a join that finds one under way uses the view as it is.
func (s *Store) refreshView(ctx context.Context, show string, v *lineView) error {
	v.mu.Lock()
	if time.Since(v.at) < viewFresh || v.refreshing {
		v.mu.Unlock()
		return nil
	}
	v.refreshing = true
	from := make([]int64, v.k)
	for p, l := range v.lines {
		if n := len(l.Marks); n > 0 {
			from[p] = l.Marks[n-1].Seq
		}
	}
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.refreshing = false
		v.mu.Unlock()
	}()
	states := make([]*goredis.SliceCmd, v.k)
	marks := make([]*goredis.ZSliceCmd, v.k)
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for q := range states {
			line := rediskey.Line(show, q, v.k)
			states[q] = p.HMGet(ctx, State(line), "cursor", "lastSeq")
			marks[q] = p.ZRangeByScoreWithScores(ctx, Marks(line), &goredis.ZRangeBy{
				Min: "(" + strconv.FormatInt(from[q], 10), Max: "+inf"})
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return storeErr("lines", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	next := append(waitroom.Lines(nil), v.lines...)
	for q := range next {
		vals := states[q].Val()
		if len(vals) == 2 {
			next[q].Cursor = max(next[q].Cursor, num(vals[0]))
			next[q].LastSeq = max(next[q].LastSeq, num(vals[1]))
		}
		next[q].Marks = withMarks(next[q].Marks, zmarks(marks[q].Val()), next[q].Cursor)
	}
	v.lines, v.at = next, time.Now()
	return nil
}

// zmarks reads marks from their sorted set's members (time) and scores (ticket).
func zmarks(zs []goredis.Z) []waitroom.Mark {
	out := make([]waitroom.Mark, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		out = append(out, waitroom.Mark{Seq: int64(z.Score), At: num(m)})
	}
	return out
}

// withMarks is marks with the newer ones added and those behind the cursor dropped, but the floor mark of the
// next ticket. It shares marks' array, which only ever grows at its end: older views keep reading their part.
func withMarks(marks, newer []waitroom.Mark, cursor int64) []waitroom.Mark {
	for _, m := range newer {
		if len(marks) == 0 || m.Seq > marks[len(marks)-1].Seq {
			marks = append(marks, m)
		}
	}
	i := 0
	for i+1 < len(marks) && marks[i+1].Seq <= cursor+1 {
		i++
	}
	return marks[i:len(marks):len(marks)]
}

// stepped is one line's step.
type stepped struct {
	snap waitroom.TickResult
	r    lineReply
}

// stepLines runs st on every line at once (each line's nonce prefixed with its jti prefix, its marks asked
// from where the view has them) and folds the answers into the view.
func (s *Store) stepLines(ctx context.Context, show string, v *lineView, st lineStep, forced ...int) ([]stepped, error) {
	v.mu.Lock()
	from := make([]int64, v.k)
	for p, l := range v.lines {
		from[p] = 0
		if n := len(l.Marks); n > 0 {
			from[p] = l.Marks[n-1].Seq
		}
	}
	v.mu.Unlock()
	out := make([]stepped, v.k)
	g, gctx := errgroup.WithContext(ctx)
	for p := range out {
		line := rediskey.Line(show, p, v.k)
		ls := st
		ls.nonce = rediskey.JTIPrefix(line) + st.nonce
		ls.marksOf = from[p]
		if forced != nil {
			ls.forced = forced[p]
		}
		g.Go(func() error {
			snap, r, err := s.admitLine(gctx, line, ls)
			if errors.Is(err, waitroom.ErrNoSettings) && p > 0 {
				if err = s.syncLine(gctx, show, line); err == nil {
					snap, r, err = s.admitLine(gctx, line, ls)
				}
			}
			out[p] = stepped{snap, r}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	next := make(waitroom.Lines, v.k)
	for p, o := range out {
		l := v.lines[p]
		next[p] = waitroom.Line{ID: l.ID, Cursor: o.snap.Cursor, LastSeq: o.snap.LastSeq, Gap: o.snap.Gap,
			Marks: withMarks(l.Marks, o.r.marks, o.snap.Cursor), Durable: o.snap.DurableCursor, Waiting: o.snap.Waiting}
	}
	v.lines, v.at = next, time.Now()
	return out, nil
}

// tickLockTTL bounds how long a dead replica's tick lock keeps the others from admitting.
const tickLockTTL = time.Second

// maxMergeRounds bounds the rounds of a partitioned tick: a round admits fewer than its budget when some line
// skipped fans gone absent, or when the merge reached the end of the tickets a line answered (maxScan); the next
// round gives what is left to the show's next fans.
const maxMergeRounds = 3

// admitLines is a partitioned queue's admission tick.
func (s *Store) admitLines(ctx context.Context, show string, k int, nonce string, grace time.Duration, maxScan int) (waitroom.TickResult, error) {
	v := s.view(show, k)
	if err := s.syncLines(ctx, show, v); err != nil {
		return waitroom.TickResult{}, err
	}
	locked := false
	if maxScan > 0 {
		ok, err := s.rdb.SetNX(ctx, TickLock(show), nonce, tickLockTTL).Result()
		if err != nil {
			return waitroom.TickResult{}, storeErr("tick lock", err)
		}
		locked = ok
	}
	if locked {
		defer func() {
			// Another replica's lock, if this tick outlived its own: left alone.
			_ = unlockScript.Run(context.WithoutCancel(ctx), s.rdb, []string{TickLock(show)}, nonce).Err()
		}()
	}
	heads := 0
	if locked {
		heads = maxScan
	}
	step := lineStep{nonce: nonce, grace: grace, maxScan: maxScan, forced: 0, heads: heads}
	out, err := s.stepLines(ctx, show, v, step)
	if err != nil {
		return waitroom.TickResult{}, err
	}
	all := append([]stepped(nil), out...)
	if locked && out[0].snap.Phase == waitroom.PhaseOpen {
		var active int64
		for _, o := range out {
			active += o.snap.Active
		}
		n, err := budgetScript.Run(ctx, s.rdb, []string{rediskey.QueueConfig(show), State(show)}, active).Int()
		if err != nil {
			return waitroom.TickResult{}, storeErr("budget", err)
		}
		for round := 0; n > 0 && round < maxMergeRounds; round++ {
			v.mu.Lock()
			order := append(waitroom.Lines(nil), v.lines...)
			v.mu.Unlock()
			hs, more := make([][]int64, k), make([]bool, k)
			for p, o := range out {
				hs[p], more[p] = o.r.heads, len(o.r.heads) >= heads
			}
			take := order.Order(hs, more, n)
			if out, err = s.stepLines(ctx, show, v, step, take...); err != nil {
				return waitroom.TickResult{}, err
			}
			all = append(all, out...)
			moved := 0
			for _, o := range out {
				n -= len(o.snap.Grants)
				moved += len(o.snap.Grants) + o.r.skipped
			}
			if moved == 0 {
				break
			}
		}
	}
	return s.foldLines(show, v, all, out), nil
}

// foldLines is the show's tick from its lines' steps: the last step's figures, summed, with every step's grants.
func (s *Store) foldLines(show string, v *lineView, all, last []stepped) waitroom.TickResult {
	home := last[0].snap
	snap := waitroom.TickResult{Show: show, Phase: home.Phase, At: home.At, AdmitPerSecond: home.AdmitPerSecond,
		MaxActive: home.MaxActive, OpensAt: home.OpensAt, Engaged: home.Engaged}
	for _, o := range last {
		l := o.snap
		snap.Cursor += l.Cursor
		snap.LastSeq += l.LastSeq
		snap.Waiting += l.Waiting
		snap.Active += l.Active
		snap.AdmittedTotal += l.AdmittedTotal
		snap.SkippedTotal += l.SkippedTotal
		snap.ArrivalsPerMinute += l.ArrivalsPerMinute
		snap.DurableCursor += l.DurableCursor
	}
	for _, o := range all {
		snap.Grants = append(snap.Grants, o.snap.Grants...)
		snap.Overdue = append(snap.Overdue, o.snap.Overdue...)
	}
	v.mu.Lock()
	snap.Lines = append(waitroom.Lines(nil), v.lines...)
	v.mu.Unlock()
	return snap
}
