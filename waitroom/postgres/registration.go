package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgshard"

	"github.com/flashseat/flashseat/waitroom"
)

// The record of verified-fan sales (waitroom.RegistrationRecord): registrations and invitation waves, tables
// registrations and invitation_waves (migration 0021). A show's rows live on the show's database.

var _ waitroom.RegistrationRecord = (*Record)(nil)

// waveLock is the show's wave lock: registrations take it shared, a draw exclusive.
const waveLock = "hashtextextended('waves:' || $1, 0)"

// Register implements waitroom.RegistrationRecord.
func (r *Record) Register(ctx context.Context, show, user string, hash [32]byte, firstSeed string) (waitroom.Registration, bool, error) {
	commitment, err := waitroom.Commit(firstSeed)
	if err != nil {
		return waitroom.Registration{}, false, err
	}
	created := false
	err = pgx.BeginFunc(ctx, r.dbs.For(show), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared("+waveLock+")", show); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO registrations (show_id, user_id, fan_hash) VALUES ($1, $2, $3)
			ON CONFLICT (show_id, user_id) DO NOTHING`, show, user, hash[:])
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		// The first wave's seed, committed with the first registration: before any wave can be drawn.
		_, err = tx.Exec(ctx, `INSERT INTO invitation_waves (show_id, wave, seed, commitment) VALUES ($1, 1, $2, $3)
			ON CONFLICT (show_id, wave) DO NOTHING`, show, firstSeed, commitment)
		return err
	})
	if err != nil {
		return waitroom.Registration{}, false, fmt.Errorf("waitroom/postgres: register %s: %w", show, err)
	}
	reg, err := r.Registration(ctx, show, user)
	return reg, created, err
}

// registrationCols reads a registration g with its status: a fan invited by no wave is NOT_INVITED once a wave
// drew from a list that held them (their seq at most its max_seq), else REGISTERED.
const registrationCols = `g.show_id, g.fan_hash, g.registered_at, g.wave, g.lane,
	EXISTS (SELECT 1 FROM invitation_waves w WHERE w.show_id = g.show_id AND w.drawn_at IS NOT NULL
		AND w.max_seq >= g.seq)`

func scanRegistration(row pgx.Row) (waitroom.Registration, error) {
	var (
		reg      waitroom.Registration
		hash     []byte
		wave     *int
		passedBy bool
	)
	if err := row.Scan(&reg.ShowID, &hash, &reg.RegisteredAt, &wave, &reg.Lane, &passedBy); err != nil {
		return reg, err
	}
	reg.FanHash = fmt.Sprintf("%x", hash)
	reg.RegisteredAt = reg.RegisteredAt.UTC()
	switch {
	case wave != nil:
		reg.Status, reg.WaveID = waitroom.StatusInvited, *wave
	case passedBy:
		reg.Status = waitroom.StatusNotInvited
	default:
		reg.Status = waitroom.StatusRegistered
	}
	return reg, nil
}

// Registration implements waitroom.RegistrationRecord.
func (r *Record) Registration(ctx context.Context, show, user string) (waitroom.Registration, error) {
	reg, err := scanRegistration(r.dbs.For(show).QueryRow(ctx, `SELECT `+registrationCols+`
		FROM registrations g WHERE g.show_id = $1 AND g.user_id = $2`, show, user))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return reg, waitroom.ErrNotRegistered
	case err != nil:
		return reg, fmt.Errorf("waitroom/postgres: registration %s: %w", show, err)
	}
	return reg, nil
}

// RegistrationsOf implements waitroom.RegistrationRecord, across every database that keeps shows' rows.
func (r *Record) RegistrationsOf(ctx context.Context, user string) ([]waitroom.Registration, error) {
	out, err := pgshard.All(ctx, r.dbs, false, func(ctx context.Context, db *pgxpool.Pool) ([]waitroom.Registration, error) {
		rows, err := db.Query(ctx, `SELECT `+registrationCols+` FROM registrations g WHERE g.user_id = $1`, user)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitroom.Registration, error) { return scanRegistration(row) })
	})
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: registrations of %s: %w", user, err)
	}
	slices.SortFunc(out, func(a, b waitroom.Registration) int { return b.RegisteredAt.Compare(a.RegisteredAt) })
	return out, nil
}

// ContactConfirmed implements waitroom.RegistrationRecord from booking's contacts (the main database), as the
// sale's opening is read from its catalog.
func (r *Record) ContactConfirmed(ctx context.Context, user string) (bool, error) {
	var ok bool
	err := r.dbs.Main().QueryRow(ctx, `SELECT confirmed_at IS NOT NULL FROM contacts WHERE user_id = $1`, user).Scan(&ok)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("waitroom/postgres: contact of %s: %w", user, err)
	}
	return ok, nil
}

// registrantsBatch is how many registrations one read of Registrants carries.
const registrantsBatch = 10000

// Registrants implements waitroom.RegistrationRecord, reading in pages by seq so no read holds a long snapshot.
func (r *Record) Registrants(ctx context.Context, show string, each func([]waitroom.AccessFan) error) error {
	after := int64(0)
	for {
		rows, err := r.dbs.For(show).Query(ctx, `SELECT seq, user_id, wave IS NOT NULL, lane FROM registrations
			WHERE show_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, show, after, registrantsBatch)
		if err != nil {
			return fmt.Errorf("waitroom/postgres: registrants %s: %w", show, err)
		}
		var fans []waitroom.AccessFan
		for rows.Next() {
			var f waitroom.AccessFan
			if err := rows.Scan(&after, &f.User, &f.Invited, &f.Lane); err != nil {
				rows.Close()
				return fmt.Errorf("waitroom/postgres: registrants %s: %w", show, err)
			}
			fans = append(fans, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("waitroom/postgres: registrants %s: %w", show, err)
		}
		if len(fans) == 0 {
			return nil
		}
		if err := each(fans); err != nil {
			return err
		}
	}
}
