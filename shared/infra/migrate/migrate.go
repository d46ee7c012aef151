// Package migrate is the platform's one migration system: every table of every service, in versioned SQL files
// embedded here and applied in file-name order, each once, in one transaction under a transaction-scoped advisory
// lock, so edge and booking replicas starting at the same moment apply each file exactly once (the others wait and
// then find nothing left). Both services run Up at start-up, whichever comes first.
//
// A file once applied never changes; a change is a new file with the next number (TestVersionsUnique). The
// tables that services used to create themselves (0008 to 0010) are written to find themselves already there.
package migrate

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var migrations embed.FS

// migrateLock is the pg advisory lock key held while migrating, so that replicas starting at once apply each
// migration exactly once: the second waits for the first and then finds nothing left to do.
const migrateLock int64 = 0x666c617368736561 // "flashsea"

// Up applies the embedded migrations not yet applied, in file-name order, all in one transaction: either every
// file of the run is applied or none is.
//
// The lock is the transaction's, not the session's: behind PgBouncer in transaction pooling mode
// (DATABASE_POOLER) only a transaction keeps one server connection, so a session lock taken by one statement
// could be held by a server connection that the unlock never reaches. Each file runs under a savepoint, so a
// failing file is named.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	run, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = run.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := run.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("migrate lock: %w", err)
	}

	if _, err := run.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names, err := versions()
	if err != nil {
		return err
	}
	for _, version := range names {
		name := "sql/" + version + ".sql"
		var done bool
		if err := run.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)",
			version).Scan(&done); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			continue
		}
		sql, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		tx, err := run.Begin(ctx)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", version, err)
		}
		// No arguments: pgx sends the file with the simple protocol, which runs several statements.
		if _, err := tx.Exec(ctx, string(sql)); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migrate %s: %w", version, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", version); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migrate %s: %w", version, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", version, err)
		}
	}
	if err := run.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Versions lists the migrations' versions (file names without .sql) in the order they apply.
func Versions() []string {
	v, _ := versions() // the pattern is valid and the files are embedded: Glob cannot fail
	return v
}

// Digest names the set of migrations: a hash of every file's name and text, in order. Two trees with the same
// digest make the same tables (the tests' template databases are keyed by it).
func Digest() string {
	h := sha256.New()
	for _, v := range Versions() {
		b, _ := migrations.ReadFile("sql/" + v + ".sql") // listed from the embedded files: it is there
		fmt.Fprintf(h, "%s\x00%d\x00", v, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func versions() ([]string, error) {
	names, err := fs.Glob(migrations, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = strings.TrimSuffix(strings.TrimPrefix(n, "sql/"), ".sql")
	}
	return names, nil
}
