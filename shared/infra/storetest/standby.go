package storetest

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby starts a streaming replica of p, a hot standby that answers reads: a base backup of p taken with
// pg_basebackup -R (which writes primary_conninfo and standby.signal, as an operator's replica is made), started
// on its own port. It returns once the standby is in recovery and has replayed everything p had when it was
// started, and it is stopped at the end of the test. Its Stop and Start stop and restart the replica alone.
func (p *Postgres) StartStandby() *Postgres {
	p.t.Helper()
	s := newPostgres(p.t)
	host, port, _ := net.SplitHostPort(p.Addr)
	// initdb's pg_hba.conf trusts replication connections from loopback, so no password or slot is needed.
	s.run("pg_basebackup", "-h", host, "-p", port, "-U", "postgres", "-D", s.data, "-R", "-X", "stream",
		"--checkpoint=fast", "--no-sync")
	s.configure()
	s.Start()
	s.t.Cleanup(func() { s.Stop("immediate") })
	if err := p.waitReplayed(s); err != nil {
		p.t.Fatalf("storetest: standby %s of %s: %v", s.Addr, p.Addr, err)
	}
	return s
}

// WaitReplayed waits until standby has replayed everything p has written so far.
func (p *Postgres) WaitReplayed(standby *Postgres) {
	p.t.Helper()
	if err := p.waitReplayed(standby); err != nil {
		p.t.Fatalf("storetest: standby %s of %s: %v", standby.Addr, p.Addr, err)
	}
}

func (p *Postgres) waitReplayed(standby *Postgres) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target, err := flushedLSN(ctx, p.URL)
	if err != nil {
		return fmt.Errorf("primary: %w", err)
	}
	for {
		var caughtUp bool
		err := queryOne(ctx, standby.URL, `SELECT pg_is_in_recovery() AND pg_last_wal_replay_lsn() >= $1::pg_lsn`,
			&caughtUp, target)
		if err == nil && caughtUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not replayed up to %s: %v", target, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// flushedLSN is the WAL position up to which the server at url has flushed everything written so far. The test
// servers commit asynchronously (synchronous_commit off): a commit's record may still be in the WAL buffers, where
// no standby gets it, for a few hundred milliseconds. A commit made synchronously flushes every record before it.
func flushedLSN(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return "", err
	}
	var lsn string
	if _, err := conn.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		return "", err
	}
	err = conn.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn()::text`).Scan(&lsn)
	return lsn, err
}

func queryOne(ctx context.Context, url, sql string, dest any, args ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql, args...).Scan(dest)
}
