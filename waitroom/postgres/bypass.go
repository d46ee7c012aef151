package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/waitroom"
)

// The bypass codes' record: bypass_codes and bypass_uses (shared/infra/migrate's 0013), and the admissions a use
// gives in shared/admission's queue_grants, written in the use's own transaction.

const bypassCols = `id, hint, uses, used, expires_at, created_at, created_by, revoked_at, lane`

func scanBypass(row pgx.Row) (waitroom.BypassCode, error) {
	var c waitroom.BypassCode
	err := row.Scan(&c.ID, &c.Hint, &c.Uses, &c.Used, &c.ExpiresAt, &c.CreatedAt, &c.CreatedBy, &c.RevokedAt, &c.Lane)
	return c, err
}

// AddBypassCodes implements waitroom.BypassRecord: one statement for the batch.
func (r *Record) AddBypassCodes(ctx context.Context, show string, codes []waitroom.BypassCode, hashes [][]byte) error {
	ids, hints, bys := make([]string, len(codes)), make([]string, len(codes)), make([]string, len(codes))
	uses, exps, lanes := make([]int32, len(codes)), make([]time.Time, len(codes)), make([]string, len(codes))
	for i, c := range codes {
		ids[i], hints[i], bys[i], uses[i], exps[i] = c.ID, c.Hint, c.CreatedBy, int32(c.Uses), c.ExpiresAt
		lanes[i] = c.Lane
	}
	if _, err := r.dbs.For(show).Exec(ctx, `INSERT INTO bypass_codes (show_id, code_hash, id, hint, uses, expires_at, created_by, lane)
		SELECT $1, * FROM unnest($2::bytea[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::text[], $8::text[])`,
		show, hashes, ids, hints, uses, exps, bys, lanes); err != nil {
		return fmt.Errorf("waitroom/postgres: add bypass codes of %s: %w", show, err)
	}
	return nil
}

// BypassLane implements waitroom.BypassRecord.
func (r *Record) BypassLane(ctx context.Context, show string, hash []byte) (string, error) {
	var lane string
	err := r.dbs.For(show).QueryRow(ctx, `SELECT lane FROM bypass_codes WHERE show_id = $1 AND code_hash = $2`,
		show, hash).Scan(&lane)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", waitroom.ErrBypassUnknown
	case err != nil:
		return "", fmt.Errorf("waitroom/postgres: bypass code's lane of %s: %w", show, err)
	}
	return lane, nil
}

// BypassCodes implements waitroom.BypassRecord.
func (r *Record) BypassCodes(ctx context.Context, show string) ([]waitroom.BypassCode, error) {
	rows, err := r.dbs.For(show).Query(ctx, `SELECT `+bypassCols+` FROM bypass_codes WHERE show_id = $1
		ORDER BY created_at DESC, id LIMIT 10000`, show)
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: bypass codes of %s: %w", show, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitroom.BypassCode, error) { return scanBypass(row) })
	if err != nil {
		return nil, fmt.Errorf("waitroom/postgres: bypass codes of %s: %w", show, err)
	}
	return out, nil
}

// RevokeBypassCode implements waitroom.BypassRecord: the first revocation's time stays.
func (r *Record) RevokeBypassCode(ctx context.Context, show, id string) (waitroom.BypassCode, error) {
	c, err := scanBypass(r.dbs.For(show).QueryRow(ctx, `UPDATE bypass_codes SET revoked_at = coalesce(revoked_at, now())
		WHERE show_id = $1 AND id = $2 RETURNING `+bypassCols, show, id))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return c, waitroom.ErrBypassUnknown
	case err != nil:
		return c, fmt.Errorf("waitroom/postgres: revoke bypass code %s: %w", id, err)
	}
	return c, nil
}

// RedeemBypass implements waitroom.BypassRecord. The code's row is locked for the transaction, so uses of one
// code are counted one after the other and the last one goes to exactly one fan; the count, the fan's use and
// the admission commit together or not at all.
func (r *Record) RedeemBypass(ctx context.Context, show string, hash []byte, g admission.Grant) (waitroom.BypassUse, error) {
	var use waitroom.BypassUse
	err := pgx.BeginFunc(ctx, r.dbs.For(show), func(tx pgx.Tx) error {
		var err error
		use.Code, err = scanBypass(tx.QueryRow(ctx, `SELECT `+bypassCols+` FROM bypass_codes
			WHERE code_hash = $1 AND show_id = $2 FOR UPDATE`, hash, show))
		if errors.Is(err, pgx.ErrNoRows) {
			return waitroom.ErrBypassUnknown
		}
		if err != nil {
			return err
		}
		// The fan's own live admission from this code, if any: given back, no use spent.
		prev := admission.Grant{ShowID: show, UserID: g.UserID}
		err = tx.QueryRow(ctx, `SELECT q.jti, q.issued_at, q.expires_at FROM bypass_uses u
			JOIN queue_grants q ON q.show_id = $2 AND q.jti = u.jti
			WHERE u.code_hash = $1 AND u.user_id = $3 AND q.revoked_at IS NULL AND q.expires_at > now()`,
			hash, show, g.UserID).Scan(&prev.JTI, &prev.IssuedAt, &prev.ExpiresAt)
		switch {
		case err == nil:
			use.Grant, use.Again = prev, true
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		now := time.Now()
		switch c := use.Code; {
		case c.RevokedAt != nil:
			return waitroom.ErrBypassRevoked
		case !c.ExpiresAt.After(now):
			return waitroom.ErrBypassExpired
		case c.Used >= c.Uses:
			return waitroom.ErrBypassUsedUp
		}
		if _, err := tx.Exec(ctx, `UPDATE bypass_codes SET used = used + 1 WHERE code_hash = $1`, hash); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bypass_uses (code_hash, user_id, jti) VALUES ($1, $2, $3)
			ON CONFLICT (code_hash, user_id) DO UPDATE SET jti = EXCLUDED.jti, used_at = now()`,
			hash, g.UserID, g.JTI); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO queue_grants (show_id, jti, user_id, issued_at, expires_at)
			VALUES ($1, $2, $3, $4, $5)`, show, g.JTI, g.UserID, g.IssuedAt, g.ExpiresAt); err != nil {
			return err
		}
		use.Code.Used++
		use.Grant = g
		return nil
	})
	if err != nil && !isBypassRefusal(err) {
		return use, fmt.Errorf("waitroom/postgres: redeem bypass code of %s: %w", show, err)
	}
	return use, err
}

func isBypassRefusal(err error) bool {
	return errors.Is(err, waitroom.ErrBypassUnknown) || errors.Is(err, waitroom.ErrBypassRevoked) ||
		errors.Is(err, waitroom.ErrBypassExpired) || errors.Is(err, waitroom.ErrBypassUsedUp)
}
