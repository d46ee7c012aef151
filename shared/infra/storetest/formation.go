package storetest

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Formation is a pg_auto_failover formation (a monitor, a primary and a synchronous standby) that a test starts
// with the repository's own deploy/dev/pgha.sh, the script developers run, so the test proves what is shipped:
// its packages, its tuning and its URL. Its three servers listen on loopback ports of the test's and it lives in
// a temporary directory; it is stopped and deleted when the test ends.
type Formation struct {
	// URL is the formation's multi-host DATABASE_URL (target_session_attrs=read-write).
	URL string

	t      testing.TB
	script string
	env    []string
}

// StartFormation starts the formation, installing pg_auto_failover's packages first when they are missing (the
// script does, as the other tools' installers do). A test is skipped, saying why, only when they cannot be
// installed. Starting takes about a minute on two cores: initdb three times and a base backup.
func StartFormation(t testing.TB) *Formation {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	dir, err := os.MkdirTemp("", "flashseat-pgha-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The formation runs as postgres when the test runs as root: it must reach its directory inside this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := func() string { _, p, _ := net.SplitHostPort(FreeAddr(t)); return p }
	f := &Formation{t: t, script: filepath.Join(root, "deploy", "dev", "pgha.sh"),
		env: append(os.Environ(), "PGHA_DIR="+filepath.Join(dir, "f"), "PGHA_PORT="+port(), "PGHA_PORT1="+port(),
			"PGHA_PORT2="+port(), "PGHA_FAST=1")}
	if out, err := f.run("install"); err != nil {
		t.Skipf("storetest: pg_auto_failover's packages cannot be installed here (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// What the monitor and the keepers did is the first thing a failed failover test needs.
			logs, _ := filepath.Glob(filepath.Join(dir, "f", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("storetest: %s (last 3 KiB):\n%s", filepath.Base(l), b[max(0, len(b)-3072):])
			}
		}
		if out, err := f.run("stop"); err != nil {
			t.Logf("storetest: stopping the formation: %v: %s", err, out)
		}
	})
	out, err := f.run("start")
	if err != nil {
		t.Fatalf("storetest: starting the formation: %v\n%s", err, out)
	}
	f.URL = answer(out)
	return f
}

// KillPrimary kills the primary's keeper and its Postgres with SIGKILL and returns the node's name.
func (f *Formation) KillPrimary() string {
	f.t.Helper()
	out, err := f.run("kill")
	if err != nil {
		f.t.Fatalf("storetest: killing the primary: %v\n%s", err, out)
	}
	return answer(out)
}

// State is each node's name, state and address as the monitor has them, one a line.
func (f *Formation) State() string {
	out, err := f.run("state")
	if err != nil {
		return "unknown: " + err.Error()
	}
	return strings.TrimSpace(out)
}

// WaitPrimary waits until the monitor names a primary other than dead and returns its name, or fails the test.
func (f *Formation) WaitPrimary(dead string, within time.Duration) string {
	f.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, line := range strings.Split(f.State(), "\n") {
			if fs := strings.Fields(line); len(fs) >= 2 && fs[0] != dead &&
				(fs[1] == "primary" || fs[1] == "wait_primary") {
				return fs[0]
			}
		}
	}
	f.t.Fatalf("storetest: no node took over from %s within %s: %s", dead, within, f.State())
	return ""
}

// run runs the script with one command; out is stdout then stderr.
func (f *Formation) run(cmd string) (string, error) {
	c := exec.Command("bash", f.script, cmd)
	c.Env = f.env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	return stdout.String() + stderr.String(), err
}

// answer is what the script printed on stdout (its first line that is not its log, which goes to stderr).
func answer(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "pgha: ") && strings.TrimSpace(l) != "" {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// repoRoot is the directory of the go.mod above the working directory (a test runs in its package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "deploy", "dev", "pgha.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no deploy/dev/pgha.sh above the working directory")
		}
		dir = parent
	}
}
