// Package postgres is the record of shared/admission in PostgreSQL (pgx/v5): every show's queue settings, and
// every admission made with its revocation. Edge and booking both migrate it at start (idempotent, under an
// advisory lock), so either may start first against a fresh database.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
)

// Record implements admission.Record.
type Record struct {
	dbs *pgshard.Pools
}

// New returns the record on pool, whose tables shared/infra/migrate creates (queue_settings, queue_grants, queue_phase,
// queue_outbox).
func New(pool *pgxpool.Pool) *Record { return NewSharded(pgshard.Single(pool)) }

// NewSharded returns the record with each show's rows on the database dbs places the show on (DATABASE_SHARDS).
// A shard that is down fails only its shows' calls; the calls across shows (Shows, Prune, the outbox) are
// pgshard's fan-outs.
func NewSharded(dbs *pgshard.Pools) *Record { return &Record{dbs: dbs} }

var _ admission.Record = (*Record)(nil)

const settingsCols = `enabled, admit_per_second, max_active, token_ttl_seconds, paused, turn_hold_seconds, bot, version, page, mode, tuning`

func scanSettings(row pgx.Row) (admission.Settings, int64, error) {
	s := admission.DefaultSettings()
	var v int64
	var bot, page, tuning []byte
	var mode *string
	err := row.Scan(&s.Enabled, &s.AdmitPerSecond, &s.MaxActive, &s.TokenTTLSeconds, &s.Paused, &s.TurnHoldSeconds,
		&bot, &v, &page, &mode, &tuning)
	if err == nil && bot != nil {
		// Onto the defaults: a field added to BotProtection after a row was written takes its default.
		err = json.Unmarshal(bot, &s.Bot)
	}
	if err == nil && page != nil {
		err = json.Unmarshal(page, &s.Page)
	}
	if err == nil && tuning != nil {
		err = json.Unmarshal(tuning, &s.Tuning)
	}
	if mode != nil {
		s.Mode = *mode
	}
	if s.Mode == "" {
		s.Mode = s.QueueMode() // a row written by a binary that predates modes
	}
	return s, v, err
}

// pageJSON is the page column's value.
func pageJSON(s admission.Settings) []byte {
	b, _ := json.Marshal(s.Page) // two strings always marshal
	return b
}

// botJSON is the bot column's value.
func botJSON(s admission.Settings) []byte {
	b, _ := json.Marshal(s.Bot) // a struct of plain fields always marshals
	return b
}

// tuningJSON is the tuning column's value.
func tuningJSON(s admission.Settings) []byte {
	b, _ := json.Marshal(s.Tuning) // a struct of plain fields always marshals
	return b
}

// Settings implements admission.Record.
func (r *Record) Settings(ctx context.Context, show string) (admission.Settings, int64, bool, error) {
	s, v, err := scanSettings(r.dbs.For(show).QueryRow(ctx, `SELECT `+settingsCols+` FROM queue_settings WHERE show_id = $1`, show))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return admission.DefaultSettings(), 0, false, nil
	case err != nil:
		return admission.Settings{}, 0, false, fmt.Errorf("admission/postgres: settings %s: %w", show, err)
	}
	return s, v, true, nil
}

// Update implements admission.Record: the row is locked for the transaction, so concurrent operators' changes
// apply one after the other and each sees the other's result. The queue event the change makes (queue.closed,
// queue.paused, queue.opened; events.go) is written in the same transaction.
func (r *Record) Update(ctx context.Context, show string, fn func(admission.Settings) (admission.Settings, error)) (old, now admission.Settings, version int64, err error) {
	err = pgx.BeginFunc(ctx, r.dbs.For(show), func(tx pgx.Tx) error {
		var found bool
		old, version, err = scanSettings(tx.QueryRow(ctx,
			`SELECT `+settingsCols+` FROM queue_settings WHERE show_id = $1 FOR UPDATE`, show))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			old, version = admission.DefaultSettings(), 0
		case err != nil:
			return err
		default:
			found = true
		}
		if now, err = fn(old); err != nil {
			return err
		}
		version++
		if err := recordSettingsPhase(ctx, tx, show, old, now, version); err != nil {
			return err
		}
		if !found {
			// Two first changes at once: one inserts, the other waits on the row and then updates it.
			_, err = tx.Exec(ctx, `INSERT INTO queue_settings (show_id, `+settingsCols+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (show_id) DO NOTHING`, show,
				now.Enabled, now.AdmitPerSecond, now.MaxActive, now.TokenTTLSeconds, now.Paused, now.TurnHoldSeconds,
				botJSON(now), version, pageJSON(now), now.QueueMode(), tuningJSON(now))
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE queue_settings SET enabled = $2, admit_per_second = $3, max_active = $4,
			token_ttl_seconds = $5, paused = $6, turn_hold_seconds = $7, bot = $8, version = $9, page = $10,
			mode = $11, tuning = $12, updated_at = now() WHERE show_id = $1`,
			show, now.Enabled, now.AdmitPerSecond, now.MaxActive, now.TokenTTLSeconds, now.Paused,
			now.TurnHoldSeconds, botJSON(now), version, pageJSON(now), now.QueueMode(), tuningJSON(now))
		return err
	})
	if err != nil {
		return old, now, 0, fmt.Errorf("admission/postgres: update %s: %w", show, err)
	}
	return old, now, version, nil
}

// Shows implements admission.Record: every database's shows, or an error if one cannot answer.
func (r *Record) Shows(ctx context.Context) (map[string]int64, error) {
	type showVersion struct {
		show    string
		version int64
	}
	all, err := pgshard.All(ctx, r.dbs, false, func(ctx context.Context, db *pgxpool.Pool) ([]showVersion, error) {
		rows, err := db.Query(ctx, `SELECT show_id, version FROM queue_settings`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (showVersion, error) {
			var sv showVersion
			err := row.Scan(&sv.show, &sv.version)
			return sv, err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("admission/postgres: shows: %w", err)
	}
	shows := make(map[string]int64, len(all))
	for _, sv := range all {
		shows[sv.show] = sv.version
	}
	return shows, nil
}

const grantCols = `show_id, jti, user_id, issued_at, expires_at`

func scanGrant(row pgx.CollectableRow) (admission.Grant, error) {
	var g admission.Grant
	err := row.Scan(&g.ShowID, &g.JTI, &g.UserID, &g.IssuedAt, &g.ExpiresAt)
	return g, err
}

// Grants implements admission.Record.
func (r *Record) Grants(ctx context.Context, show string, now time.Time) (live, revoked []admission.Grant, err error) {
	rows, err := r.dbs.For(show).Query(ctx, `SELECT `+grantCols+`, revoked_at IS NOT NULL FROM queue_grants
		WHERE show_id = $1 AND expires_at > $2`, show, now)
	if err != nil {
		return nil, nil, fmt.Errorf("admission/postgres: grants %s: %w", show, err)
	}
	defer rows.Close()
	for rows.Next() {
		var g admission.Grant
		var isRevoked bool
		if err := rows.Scan(&g.ShowID, &g.JTI, &g.UserID, &g.IssuedAt, &g.ExpiresAt, &isRevoked); err != nil {
			return nil, nil, fmt.Errorf("admission/postgres: grants %s: %w", show, err)
		}
		if isRevoked {
			revoked = append(revoked, g)
		} else {
			live = append(live, g)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("admission/postgres: grants %s: %w", show, err)
	}
	return live, revoked, nil
}

// AddGrants implements admission.Record: one statement per batch (an admission tick's grants) and database.
func (r *Record) AddGrants(ctx context.Context, gs []admission.Grant) error {
	for db, part := range pgshard.Group(r.dbs, gs, func(g admission.Grant) string { return g.ShowID }) {
		if err := addGrants(ctx, db, part); err != nil {
			return fmt.Errorf("admission/postgres: add grants: %w", err)
		}
	}
	return nil
}

func addGrants(ctx context.Context, db *pgxpool.Pool, gs []admission.Grant) error {
	shows, jtis, users := make([]string, len(gs)), make([]string, len(gs)), make([]string, len(gs))
	iats, exps := make([]time.Time, len(gs)), make([]time.Time, len(gs))
	for i, g := range gs {
		shows[i], jtis[i], users[i], iats[i], exps[i] = g.ShowID, g.JTI, g.UserID, g.IssuedAt, g.ExpiresAt
	}
	_, err := db.Exec(ctx, `INSERT INTO queue_grants (`+grantCols+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[])
		ON CONFLICT (show_id, jti) DO NOTHING`, shows, jtis, users, iats, exps)
	return err
}

// Revoke implements admission.Record.
func (r *Record) Revoke(ctx context.Context, g admission.Grant) (bool, error) {
	iat := g.IssuedAt
	if iat.IsZero() {
		iat = time.Now()
	}
	// The conflict update touches only a row not revoked yet, so "a row came back" means "revoked now".
	tag, err := r.dbs.For(g.ShowID).Exec(ctx, `INSERT INTO queue_grants (`+grantCols+`, revoked_at)
		VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (show_id, jti) DO UPDATE SET revoked_at = now() WHERE queue_grants.revoked_at IS NULL`,
		g.ShowID, g.JTI, g.UserID, iat, g.ExpiresAt)
	if err != nil {
		return false, fmt.Errorf("admission/postgres: revoke %s: %w", g.JTI, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RevokeJTI implements admission.Record; revoking twice returns the admission again.
func (r *Record) RevokeJTI(ctx context.Context, show, jti string) (admission.Grant, error) {
	rows, err := r.dbs.For(show).Query(ctx, `UPDATE queue_grants SET revoked_at = COALESCE(revoked_at, now())
		WHERE show_id = $1 AND jti = $2 RETURNING `+grantCols, show, jti)
	if err != nil {
		return admission.Grant{}, fmt.Errorf("admission/postgres: revoke %s: %w", jti, err)
	}
	g, err := pgx.CollectExactlyOneRow(rows, scanGrant)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return admission.Grant{}, fmt.Errorf("%w: %s", admission.ErrUnknownAdmission, jti)
	case err != nil:
		return admission.Grant{}, fmt.Errorf("admission/postgres: revoke %s: %w", jti, err)
	}
	return g, nil
}

// RevokeUser implements admission.Record.
func (r *Record) RevokeUser(ctx context.Context, show, user string, now time.Time) ([]admission.Grant, error) {
	rows, err := r.dbs.For(show).Query(ctx, `UPDATE queue_grants SET revoked_at = now()
		WHERE show_id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3 RETURNING `+grantCols,
		show, user, now)
	if err != nil {
		return nil, fmt.Errorf("admission/postgres: revoke user: %w", err)
	}
	gs, err := pgx.CollectRows(rows, scanGrant)
	if err != nil {
		return nil, fmt.Errorf("admission/postgres: revoke user: %w", err)
	}
	return gs, nil
}

// Admitted implements admission.Record.
func (r *Record) Admitted(ctx context.Context, show, user string) (bool, error) {
	var ok bool
	if err := r.dbs.For(show).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queue_grants WHERE show_id = $1 AND
		user_id = $2)`, show, user).Scan(&ok); err != nil {
		return false, fmt.Errorf("admission/postgres: admitted: %w", err)
	}
	return ok, nil
}

// unsummarisedKeep is how much longer than the others an expired admission of a show without an after-sale
// summary is kept (a show booking's catalog does not know is never summarised).
const unsummarisedKeep = 180 * 24 * time.Hour

// Prune implements admission.Record, on every database that answers (pgshard.Sweep).
func (r *Record) Prune(ctx context.Context, before time.Time) (int64, error) {
	n, err := pgshard.Sweep(ctx, r.dbs, func(ctx context.Context, db *pgxpool.Pool) (int64, error) {
		// An admission of a show whose after-sale report is not summarised yet is one of its figures: it stays
		// until the summary (sale_reports) is made, or unsummarisedKeep longer for a show that never gets one.
		tag, err := db.Exec(ctx, `DELETE FROM queue_grants g WHERE g.expires_at < $1
			AND (g.expires_at < $2 OR EXISTS (SELECT 1 FROM sale_reports r WHERE r.show_id = g.show_id))`,
			before, before.Add(-unsummarisedKeep))
		return tag.RowsAffected(), err
	})
	if err != nil {
		return 0, fmt.Errorf("admission/postgres: prune: %w", err)
	}
	return n, nil
}
