package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgshard"
	"github.com/flashseat/flashseat/waitroom"
)

// Journal implements waitroom.Journal: joins and refusals gathered in memory and written in one transaction per
// database every FlushEvery, so a join never waits for PostgreSQL and a crowd costs a statement per flush, not one
// per fan. Each fan costs one row of queue_joins (the first place; the replica remembers the fans it recorded
// lately, and the primary key absorbs the rest), a refusal an addition to its minute's count (queue_refusals).
//
// What is not yet written when the replica dies (at most FlushEvery of its joins) is lost to the report, never to
// the queue: a graceful shutdown writes it (Run's last flush). While PostgreSQL is down the journal keeps up to
// maxPending joins and tries again each flush; beyond that it drops joins and counts them (Dropped), so a long
// outage costs memory that stays bounded.
type Journal struct {
	dbs        *pgshard.Pools
	log        *slog.Logger
	flushEvery time.Duration

	mu       sync.Mutex
	joins    []joinRow
	refusals map[refusalKey]int64
	dropped  int64
	seen     *lru.Cache[string, struct{}] // show and user of joins already in a flush: written once
}

type joinRow struct {
	show, user string
	at         time.Time
	shadow     bool
}

type refusalKey struct {
	show, reason string
	minute       time.Time
}

// FlushEvery is how often the journal writes by default.
const FlushEvery = 500 * time.Millisecond

// Bounds of the journal's memory.
const (
	maxPending = 200000
	maxSeen    = 200000
)

// NewJournal returns a journal writing each show's rows to the database dbs places it on.
func NewJournal(dbs *pgshard.Pools, log *slog.Logger) *Journal {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seen, _ := lru.New[string, struct{}](maxSeen) // errs only for a size below 1
	return &Journal{dbs: dbs, log: log, flushEvery: FlushEvery, refusals: map[refusalKey]int64{}, seen: seen}
}

var _ waitroom.Journal = (*Journal)(nil)

// Joined implements waitroom.Journal.
func (j *Journal) Joined(show, user string, at time.Time, shadow bool) {
	key := show + "\x00" + user
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen.Contains(key) {
		return
	}
	if len(j.joins) >= maxPending {
		j.dropped++
		return
	}
	j.seen.Add(key, struct{}{})
	j.joins = append(j.joins, joinRow{show: show, user: user, at: at.UTC(), shadow: shadow})
}

// Refused implements waitroom.Journal.
func (j *Journal) Refused(show, reason string, at time.Time) {
	j.mu.Lock()
	j.refusals[refusalKey{show: show, reason: reason, minute: at.UTC().Truncate(time.Minute)}]++
	j.mu.Unlock()
}

// Dropped is how many joins the journal could not keep while PostgreSQL was down.
func (j *Journal) Dropped() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dropped
}

// Run flushes every FlushEvery until ctx ends, then once more within five seconds (the shutdown's).
func (j *Journal) Run(ctx context.Context) {
	t := time.NewTicker(j.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := j.Flush(fctx); err != nil {
				j.log.Warn("waitroom journal: last flush failed; these joins are not in the report", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := j.Flush(ctx); err != nil && ctx.Err() == nil {
				j.log.Warn("waitroom journal: flush failed; kept for the next", "err", err)
			}
		}
	}
}

// Flush writes what was gathered, one transaction per database; what a database did not take is kept for the
// next flush.
func (j *Journal) Flush(ctx context.Context) error {
	j.mu.Lock()
	joins, refusals := j.joins, j.refusals
	j.joins, j.refusals = nil, map[refusalKey]int64{}
	j.mu.Unlock()
	if len(joins) == 0 && len(refusals) == 0 {
		return nil
	}
	type batch struct {
		joins    []joinRow
		refusals map[refusalKey]int64
	}
	byDB := map[*pgxpool.Pool]*batch{}
	at := func(show string) *batch {
		db := j.dbs.For(show)
		b := byDB[db]
		if b == nil {
			b = &batch{refusals: map[refusalKey]int64{}}
			byDB[db] = b
		}
		return b
	}
	for _, r := range joins {
		b := at(r.show)
		b.joins = append(b.joins, r)
	}
	for k, n := range refusals {
		at(k.show).refusals[k] = n
	}
	var firstErr error
	for db, b := range byDB {
		if err := writeJournal(ctx, db, b.joins, b.refusals); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			j.keep(b.joins, b.refusals)
		}
	}
	return firstErr
}

// keep puts back what a failed flush did not write, within the journal's bounds.
func (j *Journal) keep(joins []joinRow, refusals map[refusalKey]int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	room := max(0, maxPending-len(j.joins))
	if len(joins) > room {
		j.dropped += int64(len(joins) - room)
		joins = joins[:room]
	}
	j.joins = append(j.joins, joins...)
	for k, n := range refusals {
		j.refusals[k] += n
	}
}

func writeJournal(ctx context.Context, db *pgxpool.Pool, joins []joinRow, refusals map[refusalKey]int64) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if len(joins) > 0 {
			shows, users := make([]string, len(joins)), make([]string, len(joins))
			ats, shadows := make([]time.Time, len(joins)), make([]bool, len(joins))
			for i, r := range joins {
				shows[i], users[i], ats[i], shadows[i] = r.show, r.user, r.at, r.shadow
			}
			if _, err := tx.Exec(ctx, `INSERT INTO queue_joins (show_id, user_id, joined_at, shadow)
				SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::boolean[])
				ON CONFLICT (show_id, user_id) DO NOTHING`, shows, users, ats, shadows); err != nil {
				return err
			}
		}
		if len(refusals) > 0 {
			var shows, reasons []string
			var minutes []time.Time
			var ns []int64
			var suspects []bool
			for k, n := range refusals {
				row, _ := waitroom.ReasonOf(k.reason)
				shows, reasons, minutes = append(shows, k.show), append(reasons, k.reason), append(minutes, k.minute)
				ns, suspects = append(ns, n), append(suspects, row.Suspect)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO queue_refusals (show_id, reason, minute, n, suspect)
				SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::boolean[])
				ON CONFLICT (show_id, minute, reason) DO UPDATE SET n = queue_refusals.n + EXCLUDED.n`,
				shows, reasons, minutes, ns, suspects); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waitroom/postgres: journal: %w", err)
	}
	return nil
}
