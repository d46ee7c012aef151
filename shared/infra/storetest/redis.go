package storetest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
	done chan struct{} // closed when cmd has exited
}

// StartRedis starts redis-server (from PATH) with the extra arguments (e.g. "--notify-keyspace-events", "Ex")
// and stops it at the end of the test.
//
// The free port it picks may be taken by another process before redis-server binds it (test packages run in
// parallel), and a cluster node also needs the port 10000 above its own for the cluster bus: a server that
// exits at start is tried again on another port.
func StartRedis(t TB, args ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("storetest: redis-server is not installed (make services installs it): %v", err)
	}
	cluster := slices.Contains(args, "--cluster-enabled")
	var last error
	for range 10 {
		addr := FreeAddr(t)
		if _, port, _ := net.SplitHostPort(addr); cluster {
			if p, _ := strconv.Atoi(port); p > 65535-10000 {
				continue // no room for the cluster bus port above it
			}
		}
		r := &Redis{Addr: addr, URL: "redis://" + addr + "/0", t: t, args: args}
		if last = r.start(); last == nil {
			t.Cleanup(r.Kill)
			return r
		}
	}
	t.Fatalf("storetest: redis-server: %v", last)
	return nil
}

// Start starts the server again on its address, empty. It waits until it accepts connections.
func (r *Redis) Start() {
	r.t.Helper()
	if err := r.start(); err != nil {
		r.t.Fatalf("storetest: redis-server on %s: %v", r.Addr, err)
	}
}

// start starts redis-server on r.Addr and waits until it answers PING there; it fails if the server exits
// first (its port was taken) or does not answer within 10 s.
func (r *Redis) start() error {
	host, port, _ := net.SplitHostPort(r.Addr)
	args := append([]string{"--port", port, "--bind", host, "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", r.t.TempDir()}, r.args...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	// A PING answered while our process still runs is our server answering, not another that took the port.
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			r.mu.Lock()
			r.cmd = nil
			r.mu.Unlock()
			return fmt.Errorf("redis-server on %s exited at start (its port taken?)", r.Addr)
		default:
		}
		if rdb.Ping(context.Background()).Err() == nil {
			select {
			case <-done:
				continue // answered by another server on the port just before ours gave up
			default:
				return nil
			}
		}
		if time.Now().After(deadline) {
			r.Kill()
			return fmt.Errorf("redis-server on %s: no answer to PING within 10 s", r.Addr)
		}
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
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
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
