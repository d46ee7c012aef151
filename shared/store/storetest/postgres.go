package storetest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
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
	host, port, _ := net.SplitHostPort(addr)
	p := &Postgres{Addr: addr, URL: fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr), t: t,
		bin: bin, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("storetest: running as root and no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p.run("initdb", "-D", p.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	conf := fmt.Sprintf("\nport = %s\nlisten_addresses = '%s'\nunix_socket_directories = '%s'\nfsync = off\n"+
		"synchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\nshared_buffers = 32MB\n", port, host, dir)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(conf)
	_ = f.Close()
	p.Start()
	t.Cleanup(func() { p.Stop("immediate") })
	return p
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
