package pgtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/migrate"
)

// Migrating a database takes about half a second and the suite makes hundreds. Each server gets one migrated
// template per set of migrations instead, named by migrate.Digest, and every test's database is a copy of it
// (CREATE DATABASE … TEMPLATE), which takes a fraction of that. A tree with other migrations (another checkout
// running its tests on the same server) has its own template, so neither sees the other's tables.

// templateLock serialises building a template among test binaries running at once on one server.
const templateLock int64 = 0x6673746d706c6174 // "fstmplat"

var templates struct {
	sync.Mutex
	byBase map[string]string
}

// templateOn returns the template database for this tree's migrations on admin's server, building it once.
func templateOn(ctx context.Context, admin *pgx.Conn, base string) (string, error) {
	templates.Lock()
	defer templates.Unlock()
	if name, ok := templates.byBase[base]; ok {
		return name, nil
	}
	name := "fstpl_" + migrate.Digest()[:16]
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer func() { _, _ = admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLock) }()
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if err := buildTemplate(ctx, admin, base, name); err != nil {
			return "", err
		}
	}
	if templates.byBase == nil {
		templates.byBase = map[string]string{}
	}
	templates.byBase[base] = name
	return name, nil
}

// buildTemplate migrates a database under a working name and renames it to name once it is whole, so a build
// that dies halfway leaves no template that looks finished.
func buildTemplate(ctx context.Context, admin *pgx.Conn, base, name string) error {
	work := name + "_build"
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS "`+work+`" WITH (FORCE)`); err != nil {
		return err
	}
	var err error
	for i := 0; ; i++ { // template1 is copied by other sessions too: retry as New does
		_, err = admin.Exec(ctx, `CREATE DATABASE "`+work+`"`)
		if err == nil || i == 20 {
			break
		}
		time.Sleep(time.Duration(50*(i+1)) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", work, err)
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		return err
	}
	cfg.ConnConfig.Database = work
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	err = migrate.Up(ctx, pool)
	pool.Close() // a template must have no sessions when it is copied or renamed
	if err != nil {
		return fmt.Errorf("migrate %s: %w", work, err)
	}
	// The server ends the pool's backend a moment after the pool closes it: until then the rename is refused.
	for i := 0; ; i++ {
		_, err = admin.Exec(ctx, `ALTER DATABASE "`+work+`" RENAME TO "`+name+`"`)
		if err == nil || i == 20 {
			return err
		}
		time.Sleep(time.Duration(50*(i+1)) * time.Millisecond)
	}
}
