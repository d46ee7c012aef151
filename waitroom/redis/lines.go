package redis

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// A partitioned queue (QueueConfig's "partitions" K > 1) is K lines, each a whole queue under its own hash tag
// (rediskey.Line): every script here runs unchanged on one line's keys. What is the show's, not a line's, lives
// here:
//   - a fan's line is rediskey.PartitionOf their id (within their lane's lines, when the show has lanes:
//     lanes.go), and their ticket carries the line (waitroom.Ticket);
//   - each line keeps copies of the show's QueueConfig and ShowInfo, which syncLines writes at each tick (and a
//     join that finds none, at once), so a line's join reads its settings on its own master;
//   - the tick (admitLines) spends one rate budget and one active cap for the show: under the show's tick lock
//     it steps every line (admit.lua with a count of 0: expired grants, overdue recordings, the line's next
//     tickets and new marks), takes the show's budget (budget.lua, on the show's own slot), merges the lines'
//     heads in the show's order (waitroom.Lines.Order; each lane's own lines for its part of the budget, when
//     the show has lanes: lanes.go) and admits each line's share, nobody behind the last
//     ticket the merge chose there (a fan skipped as absent, or a ticket another replica's tick took once a slow
//     tick outlived its lock, leaves the rest to the next round's merge), again for fans skipped as absent; a replica without the lock only steps the lines, for its streams;
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
	k     int             // lines in all: lanes times partitions
	lanes admission.Lanes // none: one general lane
	at    time.Time
}

// lines is the replica's memory of partitioned shows: their counts, and each show's view of its lines.
type lines struct {
	mu    sync.RWMutex // every join reads parts; a write is once a second per show
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

// lastMarks is the ticket of each line's last mark in the view, where a read of the lines' new marks starts.
// The caller holds v.mu.
func (v *lineView) lastMarks() []int64 {
	from := make([]int64, v.k)
	for p, l := range v.lines {
		if n := len(l.Marks); n > 0 {
			from[p] = l.Marks[n-1].Seq
		}
	}
	return from
}

// maxLineShows bounds the memory of lines: shows on sale at once, with room to spare.
const maxLineShows = 4096

// parts is show's partition count (1: a single queue).
func (s *Store) parts(ctx context.Context, show string) (int, error) {
	s.lines.mu.RLock()
	e, ok := s.lines.parts[show]
	s.lines.mu.RUnlock()
	if ok && time.Since(e.at) < partsFresh {
		return e.k, nil
	}
	vals, err := s.rdb.HMGet(ctx, rediskey.QueueConfig(show), rediskey.QueuePartitions, rediskey.QueueLanes).Result()
	if err != nil {
		return 0, storeErr("partitions", err)
	}
	v, _ := vals[0].(string)
	k, _ := strconv.Atoi(v)
	k = min(max(k, 1), rediskey.MaxPartitions)
	lv, _ := vals[1].(string)
	lanes := admission.ParseLanes(lv)
	if k%lanes.Count() != 0 {
		lanes = admission.Lanes{} // not a copy the keeper wrote: every fan in one lane, as before lanes
	}
	s.lines.mu.Lock()
	if len(s.lines.parts) >= maxLineShows {
		clear(s.lines.parts)
	}
	s.lines.parts[show] = partsEntry{k: k, lanes: lanes, at: time.Now()}
	s.lines.mu.Unlock()
	return k, nil
}

// forgetParts drops this replica's memory of show's partition count.
func (s *Store) forgetParts(show string) {
	s.lines.mu.Lock()
	delete(s.lines.parts, show)
	s.lines.mu.Unlock()
}

// JTIPrefix implements waitroom.Store: what an admission's token id starts with, so booking finds the line's
// active admissions from it (rediskey.ActiveFor); with lane, that lane's line for the fan (lanes.go).
func (s *Store) JTIPrefix(ctx context.Context, show, user, lane string) (string, error) {
	k, err := s.parts(ctx, show)
	if err != nil {
		return "", err
	}
	if lanes := s.lanesOf(show, k); lane != "" && lanes.Count() > 1 {
		return rediskey.JTIPrefix(laneLine(show, user, k, lanes, lanes.Index(lane))), nil
	}
	line, _, err := s.lineOf(ctx, show, user, k)
	return rediskey.JTIPrefix(line), err
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

// stepped is one line's step.
type stepped struct {
	snap waitroom.TickResult
	r    lineReply
}

// merged is what a tick's merge chose: how many fans to admit from each line, and each line's last ticket
// among them.
type merged struct {
	take []int
	upto []int64
}

// mergeHeads is the merge of the lines' heads that out answered, for n fans (waitroom.Lines.Order).
func mergeHeads(order waitroom.Lines, out []stepped, heads, n int) *merged {
	m := &merged{take: make([]int, len(out)), upto: make([]int64, len(out))}
	m.add(order, out, heads, n, 0)
	return m
}

// add merges the heads of the lines order covers (order's line p is out's lo+p) for n fans into m.
func (m *merged) add(order waitroom.Lines, out []stepped, heads, n, lo int) {
	k := len(order)
	hs, more := make([][]int64, k), make([]bool, k)
	for p := range order {
		o := out[lo+p]
		hs[p], more[p] = o.r.heads, len(o.r.heads) >= heads
	}
	for p, t := range order.Order(hs, more, n) {
		m.take[lo+p] = t
		if t > 0 {
			m.upto[lo+p] = hs[p][t-1] // a line's heads come in ticket order (its wait set's scores)
		}
	}
}

// stepLines runs st on every line at once (each line's nonce prefixed with its jti prefix, its marks asked
// from where the view has them) and folds the answers into the view. With m, each line admits what the merge
// chose from it and nobody behind.
func (s *Store) stepLines(ctx context.Context, show string, v *lineView, st lineStep, m *merged) ([]stepped, error) {
	v.mu.Lock()
	from := v.lastMarks()
	v.mu.Unlock()
	out := make([]stepped, v.k)
	g, gctx := errgroup.WithContext(ctx)
	for p := range out {
		line := rediskey.Line(show, p, v.k)
		ls := st
		ls.nonce = rediskey.JTIPrefix(line) + st.nonce
		ls.marksOf = from[p]
		if m != nil {
			ls.forced, ls.upto = m.take[p], m.upto[p]
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
	withLanes(next, s.lanesOf(show, v.k))
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
	out, err := s.stepLines(ctx, show, v, step, nil)
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
		ln, err := s.openLanes(ctx, show, k, out, n)
		if err != nil {
			return waitroom.TickResult{}, err
		}
		for round := 0; n > 0 && round < maxMergeRounds; round++ {
			v.mu.Lock()
			order := append(waitroom.Lines(nil), v.lines...)
			v.mu.Unlock()
			m := mergeHeads(order, out, heads, n)
			if ln != nil {
				m = ln.merge(order, out, heads, n)
			}
			if out, err = s.stepLines(ctx, show, v, step, m); err != nil {
				return waitroom.TickResult{}, err
			}
			all = append(all, out...)
			moved := 0
			for p, o := range out {
				n -= len(o.snap.Grants)
				moved += len(o.snap.Grants) + o.r.skipped
				ln.admitted(p, len(o.snap.Grants))
			}
			if moved == 0 {
				break
			}
		}
		if err := s.closeLanes(ctx, show, ln); err != nil {
			return waitroom.TickResult{}, err
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
