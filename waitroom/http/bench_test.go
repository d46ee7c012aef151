package http_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
)

// BenchmarkStreams measures how many concurrent event streams one process serving the waiting room holds, and
// the memory each costs. The fans run in a child process (this test binary again, TestStreamClients), so the
// server's memory is its own; they connect from 127.0.0.2, .3, ... so no source address runs out of ephemeral
// ports. Run it on its own:
//
//	go test -run '^$' -bench Streams -benchtime 1x ./waitroom/http/
//
// WAITROOM_BENCH_STREAMS sets the target (default 50,000); it is capped by RLIMIT_NOFILE's hard limit, which the
// benchmark raises its soft limit to.
func BenchmarkStreams(b *testing.B) {
	limit := raiseNoFile(b)
	target := 50000
	if v, err := strconv.Atoi(os.Getenv("WAITROOM_BENCH_STREAMS")); err == nil && v > 0 {
		target = v
	}
	n := target
	if max := int(limit) - 1000; n > max {
		b.Logf("RLIMIT_NOFILE hard limit %d: holding %d streams instead of %d", limit, max, target)
		n = max
	}
	s := newServer(b, waitroom.Options{}, nil)
	show := s.show(b, 0.001, 100) // nobody is admitted: every stream stays open, refreshed every 2 s

	before := memory()
	child := exec.Command(os.Args[0], "-test.run", "^TestStreamClients$", "-test.v")
	child.Env = append(os.Environ(), "WR_STREAM_CLIENTS=1", "WR_BASE="+s.base, "WR_SHOW="+show,
		"WR_N="+strconv.Itoa(n), "WR_SECRET="+string(userSecret))
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	start := time.Now()
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer child.Wait() //nolint:errcheck
	lines := bufio.NewScanner(stdout)
	var connected, failed int
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "CONNECTED %d %d", &connected, &failed); err == nil {
			break
		}
	}
	took := time.Since(start)
	cpu0 := cpuTime()
	time.Sleep(5 * time.Second) // a few refresh rounds with everyone connected
	cpuHeld := (cpuTime() - cpu0).Seconds() / 5
	held := s.svc.Hub.Conns()
	after := memory()
	stdin.Close()
	var alive int
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "ALIVE %d", &alive); err == nil {
			break
		}
	}
	if held == 0 {
		b.Fatalf("no stream held (connected %d, failed %d)", connected, failed)
	}
	b.ReportMetric(float64(held), "streams")
	b.ReportMetric(float64(alive), "alive-after-5s")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(float64(after.rss-before.rss)/float64(held), "rss-B/stream")
	b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/float64(held), "heap+stack-B/stream")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(held), "goroutines/stream")
	b.ReportMetric(float64(held)/took.Seconds(), "connects/s")
	b.ReportMetric(cpuHeld*100, "cpu%-holding") // refreshes every 2 s for every stream, heartbeats, ticks
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type mem struct {
	rss, heap, stack uint64
	goroutines       int
}

func memory() mem {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := mem{heap: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			m.rss = pages * uint64(os.Getpagesize())
		}
	}
	return m
}

func raiseNoFile(tb testing.TB) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	return lim.Max
}

// TestStreamClients is BenchmarkStreams's crowd, run in a child process: WR_N fans each open a stream and wait
// for their first position, then keep reading until stdin closes.
func TestStreamClients(t *testing.T) {
	if os.Getenv("WR_STREAM_CLIENTS") != "1" {
		t.Skip("the crowd of BenchmarkStreams")
	}
	raiseNoFile(t)
	n, _ := strconv.Atoi(os.Getenv("WR_N"))
	addr := strings.TrimPrefix(os.Getenv("WR_BASE"), "http://")
	show := os.Getenv("WR_SHOW")
	is, err := token.NewUserIssuer([]byte(os.Getenv("WR_SECRET")))
	if err != nil {
		t.Fatal(err)
	}
	var failed, alive atomic.Int64
	var conns sync.WaitGroup
	sem := make(chan struct{}, 256)
	var mu sync.Mutex
	var open []net.Conn
	for i := range n {
		sem <- struct{}{}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() { <-sem }()
			d := net.Dialer{Timeout: 10 * time.Second,
				LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+(i/20000)), byte(2+(i/10000)%250))}}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				failed.Add(1)
				return
			}
			tok, _ := is.Issue("b"+strconv.Itoa(i), time.Now(), time.Hour)
			fmt.Fprintf(c, "GET /queue/%s/events?access_token=%s HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n", show, tok)
			buf := make([]byte, 1024)
			var got []byte
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			for !bytes.Contains(got, []byte("event: position")) {
				k, err := c.Read(buf)
				if err != nil {
					failed.Add(1)
					c.Close()
					return
				}
				got = append(got, buf[:k]...)
			}
			_ = c.SetReadDeadline(time.Time{})
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}()
	}
	conns.Wait()
	fmt.Printf("CONNECTED %d %d\n", len(open), failed.Load())
	for _, c := range open {
		go func() {
			buf := make([]byte, 256)
			alive.Add(1)
			_, _ = io.CopyBuffer(io.Discard, c, buf)
			alive.Add(-1)
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark is done measuring
	fmt.Printf("ALIVE %d\n", alive.Load())
	for _, c := range open {
		c.Close()
	}
}
