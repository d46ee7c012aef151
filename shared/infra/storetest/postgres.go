package storetest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Postgres is a private PostgreSQL cluster (initdb and pg_ctl from the machine's installation) on a free loopback
// port in a temporary directory, for tests that must restart or stop PostgreSQL without touching the machine's
// shared server. Its data survives a restart, as a real server's does.
type Postgres struct {
	Addr string // host:port
	URL  string // postgres://postgres@host:port/postgres?sslmode=disable (trust authentication)

	t    testing.TB
	bin  string
	data string
	cred *syscall.Credential
}

// StartPostgres creates and starts the cluster, and stops it at the end of the test. Run as root (a container),
// the server runs as the postgres user, since PostgreSQL refuses to run as root.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	p := newPostgres(t)
	p.run("initdb", "-D", p.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	p.configure()
	p.Start()
	t.Cleanup(func() { p.Stop("immediate") })
	return p
}

// newPostgres is a cluster not yet created: its temporary directory (the postgres user's when the test runs as
// root), its port and its URL.
func newPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Fatal("storetest: no PostgreSQL installation under /usr/lib/postgresql (make services installs it)")
	}
	dir, err := os.MkdirTemp("", "flashseat-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	addr := FreeAddr(t)
	p := &Postgres{Addr: addr, URL: fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr), t: t,
		bin: bin, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		if p.cred, err = lookupPostgres(); err != nil {
			t.Fatalf("storetest: running as root and %v", err)
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// configure appends the test server's settings to its postgresql.conf: its own port and socket directory, and
// durability traded for speed. Appended last, they win over a base backup's copy of its primary's.
func (p *Postgres) configure() {
	p.t.Helper()
	host, port, _ := net.SplitHostPort(p.Addr)
	conf := fmt.Sprintf("\nport = %s\nlisten_addresses = '%s'\nunix_socket_directories = '%s'\nfsync = off\n"+
		"synchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\nshared_buffers = 32MB\n",
		port, host, filepath.Dir(p.data))
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	_, _ = f.WriteString(conf)
	_ = f.Close()
}

// Start starts the server and waits until it accepts connections.
func (p *Postgres) Start() {
	p.t.Helper()
	p.run("pg_ctl", "-D", p.data, "-l", filepath.Join(filepath.Dir(p.data), "server.log"), "-w", "-t", "60", "start")
	if err := waitListening(p.Addr, 30*time.Second); err != nil {
		p.t.Fatalf("storetest: postgres on %s: %v", p.Addr, err)
	}
}

// Stop stops the server in pg_ctl's mode: "fast" (what a restart does: clients are disconnected, transactions
// rolled back) or "immediate" (a crash: recovery runs at the next start). Stopping a stopped server does nothing.
func (p *Postgres) Stop(mode string) {
	p.t.Helper()
	if _, err := os.Stat(filepath.Join(p.data, "postmaster.pid")); err != nil {
		return
	}
	p.run("pg_ctl", "-D", p.data, "-m", mode, "-w", "-t", "60", "stop")
}

// Restart stops the server the way a deploy does (fast) and starts it again.
func (p *Postgres) Restart() {
	p.t.Helper()
	p.Stop("fast")
	p.Start()
}

func (p *Postgres) run(name string, args ...string) {
	p.t.Helper()
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("storetest: %s %v: %v\n%s", name, args, err, out.String())
	}
}

// postgresBin is the newest installed PostgreSQL's bin directory.
func postgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return ""
	}
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	return dirs[len(dirs)-1]
}
