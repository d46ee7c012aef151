package migrate_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/flashseat/flashseat/shared/infra/migrate"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// TestUpConcurrently: replicas of both services start at once; every Up succeeds, each file is applied once.
func TestUpConcurrently(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t) // migrated once already; more at once must all succeed and change nothing
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = migrate.Up(context.Background(), pool) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	var n, files int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	files = len(migrate.Versions())
	if n != files {
		t.Fatalf("schema_migrations holds %d versions, want the %d files", n, files)
	}
	for _, table := range []string{"bookings", "queue_settings", "queue_outbox", "waitroom_queues", "audit_log"} {
		var ok bool
		if err := pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil || !ok {
			t.Fatalf("table %s missing after Up: %v", table, err)
		}
	}
}

// TestUpOverSelfCreatedTables: a database whose services created their own tables before the versioned migrations
// took them over (as shared/pgschema did) migrates cleanly, and keeps its rows.
func TestUpOverSelfCreatedTables(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	for _, v := range []string{"0008_admission", "0009_waitroom", "0010_audit"} {
		if _, err := pool.Exec(ctx, "DELETE FROM schema_migrations WHERE version = $1", v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO audit_log (actor, action) VALUES ('op', 'kept')`); err != nil {
		t.Fatal(err)
	}
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatalf("migrate over existing tables: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'kept'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit row: %d %v", n, err)
	}
}

// TestVersionsUnique: each migration has a number of its own, so their order is never left to the rest of the
// name. The three 0004s were applied under these names before this rule, and keep them: a version once applied is
// never renamed.
func TestVersionsUnique(t *testing.T) {
	grandfathered := map[string]bool{"0004_console": true, "0004_pay_next_action": true, "0004_waitlist_offers": true}
	number := regexp.MustCompile(`^(\d{4})_[a-z0-9_]+$`)
	seen := map[string]string{}
	for _, v := range migrate.Versions() {
		m := number.FindStringSubmatch(v)
		if m == nil {
			t.Errorf("migration %q: want NNNN_name in lower case", v)
			continue
		}
		if prev, ok := seen[m[1]]; ok && !(grandfathered[prev] && grandfathered[v]) {
			t.Errorf("migrations %s and %s share the number %s", prev, v, m[1])
		}
		seen[m[1]] = v
	}
	if len(seen) == 0 || !strings.HasPrefix(migrate.Versions()[0], "0001") {
		t.Fatalf("versions: %v", migrate.Versions())
	}
}
