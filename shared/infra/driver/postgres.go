package driver

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolerPgBouncer is DATABASE_POOLER's value for a DATABASE_URL that points at PgBouncer in transaction pooling
// mode rather than at PostgreSQL itself.
const PoolerPgBouncer = "pgbouncer"

// CheckPooler validates DATABASE_POOLER: empty (PostgreSQL itself) or "pgbouncer".
func CheckPooler(pooler string) error {
	if pooler != "" && pooler != PoolerPgBouncer {
		return fmt.Errorf("DATABASE_POOLER: %q is neither empty nor %q", pooler, PoolerPgBouncer)
	}
	return nil
}

// PostgresConfig parses a service's PostgreSQL URL (one host, or several with target_session_attrs=read-write, as
// a failover formation's) into a pool configuration. maxConns applies unless the URL sets pool_max_conns.
//
// Behind PgBouncer in transaction pooling mode (pooler "pgbouncer") each transaction, and each statement outside
// one, may run on another server connection. pgx's default mode prepares every statement once per connection
// under a name and then only executes it: a name that the next server connection has never seen. There pgx
// caches each statement's description instead and sends it whole every time, on the unnamed statement, in one
// round trip (QueryExecModeCacheDescribe): nothing outlives its transaction. A default_query_exec_mode in the
// URL still wins. Session state is the other thing PgBouncer does not keep, and the platform uses none: its
// advisory locks are transaction-scoped, and it never LISTENs or SETs a session parameter.
func PostgresConfig(url, pooler string, maxConns int32) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") && maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if pooler == PoolerPgBouncer && !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	return cfg, nil
}
