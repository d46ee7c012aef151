// Package pgtest gives each test its own freshly migrated Postgres database, dropped when the test ends, so
// storage tests run against the real thing in parallel without seeing each other's rows.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/migrate"
)

// DefaultURL is used when DATABASE_URL is not set; it matches `make services`.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable"

// New creates a uniquely named database on the server of DATABASE_URL, applies the platform's migrations
// (shared/infra/migrate: every service's tables) and returns a pool to it. The pool is closed and the database dropped in
// t.Cleanup.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := NewWithURL(t)
	return pool
}

// NewWithURL is New that also returns the database's URL, for code under test that opens its own pool (an app's
// Run from its Config).
func NewWithURL(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		base = DefaultURL
	}
	return NewOn(t, base)
}

// NewOn is NewWithURL on the server of base instead of DATABASE_URL's: a test's own server, or a failover
// formation's multi-host URL (the database is created on whichever host accepts writes, and its URL keeps
// every host).
func NewOn(t testing.TB, base string) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adminCfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatalf("pgtest: DATABASE_URL: %v", err)
	}
	adminCfg.Database = "postgres"
	admin, err := connect(ctx, adminCfg)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer admin.Close(ctx)

	tpl, err := templateOn(ctx, admin, base)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "fstest_" + hex.EncodeToString(rnd[:])
	// CREATE DATABASE fails when another session is copying the same source at that moment; parallel tests
	// do, so retry briefly.
	for i := 0; ; i++ {
		_, err = admin.Exec(ctx, `CREATE DATABASE "`+name+`" TEMPLATE "`+tpl+`"`)
		if err == nil || i == 40 {
			break
		}
		time.Sleep(time.Duration(25*(i+1)) * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}

	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.Database = name
	// Small: many tests run at once against one server, whose default max_connections is 100.
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := connect(ctx, adminCfg)
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	// The copy holds every migration already; Up finds nothing left, and would apply what a template lacked.
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return pool, withDatabase(base, name)
}

// connect retries for a while when the server has no connection slot free (SQLSTATE 53300), as happens when
// many test binaries run at once.
func connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	for i := 0; ; i++ {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil || i == 50 || !strings.Contains(err.Error(), "53300") {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// withDatabase returns base (a URL or a key=value DSN) naming database name instead.
func withDatabase(base, name string) string {
	if u, err := url.Parse(base); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	return base + " dbname=" + name
}
