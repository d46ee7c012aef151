// Package pgschema applies a package's idempotent PostgreSQL schema (CREATE ... IF NOT EXISTS statements) under an
// advisory lock. Packages whose tables are shared by several binaries (the audit log, the waiting room's record)
// migrate themselves with it at start-up: edge and booking replicas may start at the same moment, and
// CREATE TABLE IF NOT EXISTS is not safe concurrently (both may pass the check; one then fails on the catalog).
package pgschema

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Apply runs every ;-separated statement of schema in one transaction holding advisory lock key. Each schema
// must be idempotent: Apply runs it on every start.
func Apply(ctx context.Context, pool *pgxpool.Pool, key int64, schema string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// A transaction lock: released by the commit, even if this process dies half way.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", key); err != nil {
		return fmt.Errorf("migrate lock: %w", err)
	}
	for _, stmt := range strings.Split(schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
