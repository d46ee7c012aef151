package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bookingapp "github.com/flashseat/flashseat/booking/app"
	edgeapp "github.com/flashseat/flashseat/edge/app"
)

// roleEnv names the service a re-executed test binary serves instead of running tests: the real app's Run with
// the real configuration loader, in its own process, so that the test can SIGKILL it.
const roleEnv = "FLASHSEAT_CHAOS_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(serve(role))
	}
	os.Exit(m.Run())
}

// serve runs one service as its command would: configuration from the environment, SIGTERM to stop.
func serve(role string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", role)
	var err error
	switch role {
	case "booking":
		var cfg bookingapp.Config
		if cfg, err = bookingapp.LoadConfig(os.Getenv); err == nil {
			err = bookingapp.Run(ctx, cfg, log, nil)
		}
	case "edge":
		var cfg edgeapp.Config
		if cfg, err = edgeapp.LoadConfig(os.Getenv); err == nil {
			err = edgeapp.Run(ctx, cfg, log, nil)
		}
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}

// process is one service run by re-executing the test binary, on a fixed address so that a restart is found
// where the old one was.
type process struct {
	t    *testing.T
	role string
	addr string
	env  []string
	logs *os.File

	mu  sync.Mutex
	cmd *exec.Cmd
}

func newProcess(t *testing.T, role, addr string, env map[string]string) *process {
	t.Helper()
	logs, err := os.Create(t.TempDir() + "/" + role + ".log")
	if err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, role: role, addr: addr, logs: logs, env: append(os.Environ(), roleEnv+"="+role)}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("%s's log (last 3 kB):\n%s", role, tail(string(b), 3000))
		}
		_ = logs.Close()
	})
	return p
}

// start launches the service and waits until its /readyz answers 200.
func (p *process) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, p.logs, p.logs
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.role, err)
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
	if !waitReady(p.t.Context(), "http://"+p.addr+"/readyz", 60*time.Second) {
		p.t.Fatalf("%s did not become ready on %s", p.role, p.addr)
	}
}

// take hands over the running process, if any, to the caller that stops it.
func (p *process) take() *exec.Cmd {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := p.cmd
	p.cmd = nil
	return cmd
}

// kill ends the service with SIGKILL: no drain, no cleanup, as a crashed machine would.
func (p *process) kill() {
	if cmd := p.take(); cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// stop ends the service gracefully (SIGTERM), at the end of the test.
func (p *process) stop() {
	cmd := p.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitReady polls url until it answers 200 or within passes.
func waitReady(ctx context.Context, url string, within time.Duration) bool {
	c := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(within); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get(url)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
