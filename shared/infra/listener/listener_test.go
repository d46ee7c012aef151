//go:build linux

package listener_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/shared/infra/listener"
)

const serveEnv = "LISTENER_TEST_SERVE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serveEnv); mode != "" {
		os.Exit(serve(mode))
	}
	os.Exit(m.Run())
}

// serve runs in a child process: it listens (through a Listener for mode "patient", plainly for "plain"), prints
// the address, lowers its open-file limit to a few descriptors more than it holds, and serves "ok" with fasthttp
// until the server stops, which it reports on stderr.
func serve(mode string) int {
	var ln net.Listener
	var err error
	if mode == "patient" {
		ln, err = listener.Listen("127.0.0.1:0", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 2
	}
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) { c.SetBodyString("ok") }}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fds:", err)
		return 2
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 2
	}
	lim.Cur = uint64(len(fds) + 8)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 2
	}
	fmt.Println(ln.Addr().String())
	err = srv.Serve(ln)
	fmt.Fprintln(os.Stderr, "serve ended:", err)
	return 3
}

// child starts serve in mode and returns the process, its address and its stderr lines.
func child(t *testing.T, mode string) (*exec.Cmd, string, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+mode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child gave no address: %v", err)
	}
	return cmd, strings.TrimSpace(addr), lines
}

// crowd opens n idle connections to addr, more than the child has descriptors for. It stops at the first dial
// that fails and returns that error with the connections it made: a server that ended closed its listener.
func crowd(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return conns, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// await returns the first line containing want, failing t if the child's stderr ends or 10 s pass first.
func await(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child's stderr ended before %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q from the child within 10 s", want)
		}
	}
}

// Without the Listener, fasthttp's server ends at the first EMFILE: this is what the Listener is for.
func TestPlainListenerEndsTheServer(t *testing.T) {
	_, addr, lines := child(t, "plain")
	// The server may end, and its listener close, before the crowd is all in: later dials are then refused,
	// which is what this test expects, so it reads the verdict from the child.
	conns, _ := crowd(addr, 40)
	defer closeAll(conns)
	if l := await(t, lines, "serve ended"); !strings.Contains(l, "too many open files") {
		t.Fatalf("the server ended for another reason: %s", l)
	}
}

// With it, the server pauses while the descriptors are taken and serves again once connections close.
func TestOutlastsRunningOutOfDescriptors(t *testing.T) {
	cmd, addr, lines := child(t, "patient")
	conns, err := crowd(addr, 40)
	if err != nil {
		closeAll(conns)
		t.Fatal(err) // the listener stays open while accepting pauses: the kernel takes the crowd into its backlog
	}
	await(t, lines, "accept paused")
	closeAll(conns)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var resp fasthttp.Response
	if err := resp.Read(bufio.NewReader(c)); err != nil {
		t.Fatalf("no answer after the crowd left: %v", err)
	}
	if resp.StatusCode() != 200 || string(resp.Body()) != "ok" {
		t.Fatalf("answer %d %q", resp.StatusCode(), resp.Body())
	}
	if cmd.ProcessState != nil {
		t.Fatal("the server's process ended")
	}
}
