package storetest

import (
	"fmt"
	"net"
	"os/exec"
	"sync"
	"time"
)

// Redis is a private redis-server on a free loopback port, for tests that must kill, restart or reconfigure
// Redis without touching the machine's shared one. It keeps nothing on disk: a restart starts it empty, as a
// Redis without persistence comes back after a crash.
type Redis struct {
	Addr string // host:port
	URL  string // redis://host:port/0

	t    TB
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// StartRedis starts redis-server (from PATH) with the extra arguments (e.g. "--notify-keyspace-events", "Ex")
// and stops it at the end of the test.
func StartRedis(t TB, args ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("storetest: redis-server is not installed (make services installs it): %v", err)
	}
	addr := DeadAddr(t)
	r := &Redis{Addr: addr, URL: "redis://" + addr + "/0", t: t, args: args}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Start starts the server again on its address, empty. It waits until it accepts connections.
func (r *Redis) Start() {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(r.Addr)
	args := append([]string{"--port", port, "--bind", host, "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", r.t.TempDir()}, r.args...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("storetest: redis-server: %v", err)
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	if err := waitListening(r.Addr, 10*time.Second); err != nil {
		r.t.Fatalf("storetest: redis-server on %s: %v", r.Addr, err)
	}
}

// Running reports whether the server was started and not killed since.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it to exit. Killing a stopped server does
// nothing.
func (r *Redis) Kill() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The port is free once the process is gone; wait until the kernel agrees, so Start can bind it again.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.Addr); err != nil {
			return
		} else {
			_ = c.Close()
		}
	}
}

// waitListening waits until addr accepts a TCP connection.
func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after %s: %w", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
