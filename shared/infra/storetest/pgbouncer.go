package storetest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is Debian's pgbouncer in transaction pooling mode in front of a test's PostgreSQL database, on a
// loopback port of the test's, with few server connections (PoolSize) for the many its clients open: the way a
// deployment pools hundreds of pods' connections. It is stopped when the test ends.
type PgBouncer struct {
	URL      string // the database through PgBouncer (its name unchanged), for DATABASE_URL
	AdminURL string // PgBouncer's admin console (SHOW POOLS, SHOW STATS)
	PoolSize int    // server connections per database and user
}

// StartPgBouncer starts PgBouncer in front of the database at dbURL (a postgres:// URL with trust
// authentication, as the tests' servers have), installing Debian's package when it is missing. The test is
// skipped, saying why, only when it cannot be installed.
func StartPgBouncer(t testing.TB, dbURL string, poolSize int) *PgBouncer {
	t.Helper()
	bin, err := pgbouncerBin()
	if err != nil {
		t.Skipf("storetest: pgbouncer cannot be installed here: %v", err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	dir, err := os.MkdirTemp("", "flashseat-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	addr := FreeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	user := u.User.Username()
	// Trust authentication still wants the user in the auth file. No Unix socket: only the test's port.
	conf := fmt.Sprintf(`[databases]
* = host=%s port=%s
[pgbouncer]
listen_addr = %s
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
admin_users = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
server_reset_query =
ignore_startup_parameters = extra_float_digits
stats_period = 1
logfile = %s
`, u.Hostname(), u.Port(), host, port, filepath.Join(dir, "users.txt"), user, poolSize,
		filepath.Join(dir, "pgbouncer.log"))
	for name, body := range map[string]string{"pgbouncer.ini": conf, "users.txt": fmt.Sprintf("%q \"\"\n", user)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	// PgBouncer refuses to run as root: as root (a container) it runs as postgres, as the tests' servers do.
	if os.Geteuid() == 0 {
		pu, err := lookupPostgres()
		if err != nil {
			t.Fatalf("storetest: running as root and %v", err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pu}
		_ = os.Chown(dir, int(pu.Uid), int(pu.Gid))
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("storetest: pgbouncer: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // a fast shutdown
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	b := &PgBouncer{PoolSize: poolSize}
	through := *u
	through.Host = addr
	b.URL = through.String()
	admin := through
	admin.Path = "/pgbouncer"
	b.AdminURL = admin.String()
	if err := waitListening(addr, 30*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		t.Fatalf("storetest: pgbouncer on %s: %v\n%s", addr, err, log)
	}
	return b
}

// Stats are PgBouncer's counters for one database: transactions and queries it passed on, and the most server
// connections it opened for it (SHOW STATS, SHOW POOLS).
type Stats struct {
	Transactions, Queries int64
	ServerConns           int
}

// Stats reads the database's counters from the admin console, which speaks only the simple protocol; its
// columns are read as the text it sends (their types differ between PgBouncer's versions).
func (b *PgBouncer) Stats(ctx context.Context, database string) (Stats, error) {
	cfg, err := pgx.ParseConfig(b.AdminURL)
	if err != nil {
		return Stats{}, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return Stats{}, err
	}
	defer conn.Close(ctx)
	var s Stats
	err = showRows(ctx, conn, "SHOW STATS", database, func(col map[string]string) {
		s.Transactions, _ = strconv.ParseInt(col["total_xact_count"], 10, 64)
		s.Queries, _ = strconv.ParseInt(col["total_query_count"], 10, 64)
	})
	if err != nil {
		return s, err
	}
	return s, showRows(ctx, conn, "SHOW SERVERS", database, func(map[string]string) { s.ServerConns++ })
}

// showRows calls row with each row of an admin command whose database column is database, by column name.
func showRows(ctx context.Context, conn *pgx.Conn, cmd, database string, row func(map[string]string)) error {
	rows, err := conn.Query(ctx, cmd)
	if err != nil {
		return err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	for rows.Next() {
		col := make(map[string]string, len(fields))
		for i, v := range rows.RawValues() {
			col[fields[i].Name] = string(v)
		}
		if col["database"] == database {
			row(col)
		}
	}
	return rows.Err()
}

// pgbouncerBin is Debian's pgbouncer, installed with apt-get when missing.
func pgbouncerBin() (string, error) {
	const bin = "/usr/sbin/pgbouncer"
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get update: %v: %s", err, out)
	}
	install := exec.Command("apt-get", "install", "-y", "-qq", "pgbouncer")
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get install pgbouncer: %v: %s", err, out)
	}
	return bin, nil
}

// lookupPostgres is the postgres user's credential.
func lookupPostgres() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("no postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
