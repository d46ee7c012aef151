package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/waitroom"
)

// DrawWave implements waitroom.RegistrationRecord: under the show's wave lock, the committed wave's seed, the
// fans registered and not yet invited (ascending by fan_hash, the published order), the draw, the invited
// marked, the wave's figures recorded and the next wave's seed committed, all in one transaction.
func (r *Record) DrawWave(ctx context.Context, show string, req waitroom.WaveRequest, nextSeed string,
	draw waitroom.WaveDraw) (waitroom.Wave, []waitroom.AccessFan, error) {
	nextCommitment, err := waitroom.Commit(nextSeed)
	if err != nil {
		return waitroom.Wave{}, nil, err
	}
	var (
		w       waitroom.Wave
		invited []waitroom.AccessFan
	)
	err = pgx.BeginFunc(ctx, r.dbs.For(show), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock("+waveLock+")", show); err != nil {
			return err
		}
		var seed string
		err := tx.QueryRow(ctx, `SELECT wave, seed, commitment FROM invitation_waves
			WHERE show_id = $1 AND drawn_at IS NULL`, show).Scan(&w.WaveID, &seed, &w.Commitment)
		if errors.Is(err, pgx.ErrNoRows) {
			return waitroom.ErrNoRegistrations
		} else if err != nil {
			return err
		}
		var maxSeq int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM registrations WHERE show_id = $1`,
			show).Scan(&maxSeq); err != nil {
			return err
		}
		eligible, err := uninvited(ctx, tx, show)
		if err != nil {
			return err
		}
		idx, err := draw(seed, eligible)
		if err != nil {
			return err
		}
		users := make([]string, len(idx))
		drawn := make([][32]byte, len(idx))
		invited = make([]waitroom.AccessFan, len(idx))
		for j, i := range idx {
			users[j], drawn[j] = eligible[i].User, eligible[i].Hash
			invited[j] = waitroom.AccessFan{User: eligible[i].User, Invited: true, Lane: req.Lane}
		}
		if _, err := tx.Exec(ctx, `UPDATE registrations g SET wave = $2, lane = $3 FROM unnest($4::text[]) u(id)
			WHERE g.show_id = $1 AND g.user_id = u.id`, show, w.WaveID, req.Lane, users); err != nil {
			return err
		}
		if err := tellWave(ctx, tx, show, w.WaveID, maxSeq); err != nil {
			return err
		}
		all := make([][32]byte, len(eligible))
		for i := range eligible {
			all[i] = eligible[i].Hash
		}
		w.Seed, w.Count, w.Lane, w.DrawnBy = seed, req.Count, req.Lane, req.By
		w.Eligible, w.EligibleSHA256 = len(eligible), waitroom.HashesDigest(all)
		w.Invited, w.InvitedSHA256 = len(idx), waitroom.HashesDigest(drawn)
		var at time.Time
		if err := tx.QueryRow(ctx, `UPDATE invitation_waves SET drawn_at = now(), count = $3, lane = $4,
			eligible = $5, eligible_sha256 = $6, invited = $7, invited_sha256 = $8, max_seq = $9, drawn_by = $10
			WHERE show_id = $1 AND wave = $2 RETURNING drawn_at`, show, w.WaveID, w.Count, w.Lane, w.Eligible,
			w.EligibleSHA256, w.Invited, w.InvitedSHA256, maxSeq, w.DrawnBy).Scan(&at); err != nil {
			return err
		}
		at = at.UTC()
		w.DrawnAt = &at
		_, err = tx.Exec(ctx, `INSERT INTO invitation_waves (show_id, wave, seed, commitment) VALUES ($1, $2, $3, $4)`,
			show, w.WaveID+1, nextSeed, nextCommitment)
		return err
	})
	if errors.Is(err, waitroom.ErrNoRegistrations) {
		return waitroom.Wave{}, nil, err
	}
	if err != nil {
		return waitroom.Wave{}, nil, fmt.Errorf("waitroom/postgres: draw a wave of %s: %w", show, err)
	}
	return w, invited, nil
}

// uninvited reads show's registered fans not yet invited, ascending by fan_hash.
func uninvited(ctx context.Context, tx pgx.Tx, show string) ([]waitroom.Eligible, error) {
	rows, err := tx.Query(ctx, `SELECT user_id, fan_hash FROM registrations WHERE show_id = $1 AND wave IS NULL
		ORDER BY fan_hash`, show)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []waitroom.Eligible
	var hash []byte
	for rows.Next() {
		var e waitroom.Eligible
		if err := rows.Scan(&e.User, &hash); err != nil {
			return nil, err
		}
		copy(e.Hash[:], hash)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Waves implements waitroom.RegistrationRecord.
func (r *Record) Waves(ctx context.Context, show string) ([]waitroom.Wave, error) {
	rows, err := r.dbs.For(show).Query(ctx, `SELECT wave, commitment, seed, drawn_at, count, lane, eligible,
		eligible_sha256, invited, invited_sha256, drawn_by FROM invitation_waves WHERE show_id = $1 ORDER BY wave`, show)
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: waves %s: %w", show, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitroom.Wave, error) {
		var w waitroom.Wave
		err := row.Scan(&w.WaveID, &w.Commitment, &w.Seed, &w.DrawnAt, &w.Count, &w.Lane, &w.Eligible,
			&w.EligibleSHA256, &w.Invited, &w.InvitedSHA256, &w.DrawnBy)
		if w.DrawnAt == nil {
			w.Seed = "" // committed, not yet drawn: the seed stays secret
		} else {
			t := w.DrawnAt.UTC()
			w.DrawnAt = &t
		}
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: waves %s: %w", show, err)
	}
	return out, nil
}

// WaveEligible implements waitroom.RegistrationRecord: the fans registered by the wave's draw (seq up to its
// max_seq) and not invited by an earlier wave, ascending by fan_hash.
func (r *Record) WaveEligible(ctx context.Context, show string, wave int) ([][32]byte, error) {
	db := r.dbs.For(show)
	var maxSeq int64
	err := db.QueryRow(ctx, `SELECT max_seq FROM invitation_waves WHERE show_id = $1 AND wave = $2
		AND drawn_at IS NOT NULL`, show, wave).Scan(&maxSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, waitroom.ErrUnknownWave
	} else if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: wave %s/%d: %w", show, wave, err)
	}
	rows, err := db.Query(ctx, `SELECT fan_hash FROM registrations WHERE show_id = $1 AND seq <= $2
		AND (wave IS NULL OR wave >= $3) ORDER BY fan_hash`, show, maxSeq, wave)
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: wave %s/%d: %w", show, wave, err)
	}
	defer rows.Close()
	var out [][32]byte
	var b []byte
	for rows.Next() {
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var h [32]byte
		copy(h[:], b)
		out = append(out, h)
	}
	return out, rows.Err()
}

// tellWave writes, in the draw's transaction, one lifecycle event for each fan the wave drew from: invited (the
// wave and lane named) or passed over (still registered, for the next wave). They go to the platform's outbox,
// which booking's relay moves to the event stream and its notify group mails (docs/EVENTS.md): so every fan of a
// wave is told exactly when the wave committed, and once.
func tellWave(ctx context.Context, tx pgx.Tx, show string, wave int, maxSeq int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox (aggregate_id, type, payload)
		SELECT user_id, CASE WHEN wave = $2 THEN $4 ELSE $5 END,
			jsonb_build_object('showId', show_id, 'userId', user_id, 'wave', $2::int, 'lane', CASE WHEN wave = $2 THEN lane ELSE '' END)
		FROM registrations WHERE show_id = $1 AND seq <= $3 AND (wave IS NULL OR wave = $2)
		ORDER BY seq`, show, wave, maxSeq, waitroom.EventInvited, waitroom.EventPassedOver)
	return err
}
