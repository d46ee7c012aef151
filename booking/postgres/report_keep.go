package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/salereport"
)

// Keeping the after-sale reports (sale_reports): a show's report is summarised once its show has started (its sale
// is over), and served from the summary from then on; the per-fan rows it was built from are deleted once the
// summary is older than the operator's retention. Every step is safe on any number of replicas at once: a summary
// is inserted once (ON CONFLICT DO NOTHING), the deletions are idempotent.

// summariseBatch bounds the shows one sweep summarises per database.
const summariseBatch = 20

// storedReport reads the show's summary, if it has one.
func storedReport(ctx context.Context, db *pgxpool.Pool, showID string) (salereport.Report, bool, error) {
	var raw []byte
	var at time.Time
	var forgotten *time.Time
	err := db.QueryRow(ctx, `SELECT report, summarised_at, fans_forgotten_at FROM sale_reports WHERE show_id = $1`,
		showID).Scan(&raw, &at, &forgotten)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return salereport.Report{}, false, nil
	case err != nil:
		return salereport.Report{}, false, fmt.Errorf("postgres: stored report %s: %w", showID, err)
	}
	var r salereport.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, false, fmt.Errorf("postgres: stored report %s: %w", showID, err)
	}
	at = at.UTC()
	r.Retention.SummarisedAt = &at
	if forgotten != nil {
		f := forgotten.UTC()
		r.Retention.FanRowsDeletedAt = &f
	}
	return r, true, nil
}

// summarise stores the reports of up to summariseBatch shows of db started before now and not summarised yet, the
// breaker's openings read from breakers (the catalog's database). It returns how many it stored.
func (s *Store) summarise(ctx context.Context, now time.Time, breakers *pgxpool.Pool) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM shows s WHERE starts_at < $1
		AND NOT EXISTS (SELECT 1 FROM sale_reports r WHERE r.show_id = s.id) ORDER BY starts_at LIMIT $2`,
		now, summariseBatch)
	if err != nil {
		return 0, fmt.Errorf("postgres: shows to summarise: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("postgres: shows to summarise: %w", err)
	}
	n := 0
	for _, id := range ids {
		r, err := s.showSale(ctx, id, now)
		if err == nil {
			err = breakerOpenings(ctx, breakers, &r)
		}
		if err != nil {
			return n, err
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return n, err
		}
		tag, err := s.pool.Exec(ctx, `INSERT INTO sale_reports (show_id, report, summarised_at) VALUES ($1, $2, $3)
			ON CONFLICT (show_id) DO NOTHING`, id, raw, now)
		if err != nil {
			return n, fmt.Errorf("postgres: summarise %s: %w", id, err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

// SummariseSales implements booking.Store.
func (s *Store) SummariseSales(ctx context.Context, now time.Time) (int, error) {
	return s.summarise(ctx, now, s.pool)
}

// ForgetFans implements booking.Store: the per-fan rows of the shows summarised before before (their joins and
// their admissions) are deleted, in one statement per batch of shows.
func (s *Store) ForgetFans(ctx context.Context, before time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH due AS (
			SELECT show_id FROM sale_reports WHERE fans_forgotten_at IS NULL AND summarised_at < $1
			ORDER BY summarised_at LIMIT 100 FOR UPDATE SKIP LOCKED),
		joins AS (DELETE FROM queue_joins WHERE show_id IN (SELECT show_id FROM due)),
		grants AS (DELETE FROM queue_grants WHERE show_id IN (SELECT show_id FROM due)),
		done AS (UPDATE sale_reports SET fans_forgotten_at = now() WHERE show_id IN (SELECT show_id FROM due)
			RETURNING 1)
		SELECT count(*) FROM done`, before).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: forget fans: %w", err)
	}
	return n, nil
}

// SummariseSales on every shard, the breaker's openings from the catalog; the shards that answer are swept.
func (s *Shards) SummariseSales(ctx context.Context, now time.Time) (int, error) {
	total := 0
	var firstErr error
	for _, st := range s.shards {
		n, err := st.summarise(ctx, now, s.catalog.pool)
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, firstErr
}

// ForgetFans on every shard.
func (s *Shards) ForgetFans(ctx context.Context, before time.Time) (int, error) {
	total := 0
	var firstErr error
	for _, st := range s.shards {
		n, err := st.ForgetFans(ctx, before)
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, firstErr
}
