package app

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// BenchmarkStreams measures what held waiting-room streams cost the real edge (Run: every middleware, the user
// cache, the rate limiters, the waiting room and its hub) and whether position updates still reach them all
// quickly. The edge runs in this process; the fans run in a child process (this test binary again,
// TestStreamCrowd), so the edge's memory is its own. They connect from 127.0.0.2, .3, ... so no source address
// runs out of ephemeral ports. Run it on its own:
//
//	go test -run '^$' -bench Streams -benchtime 1x -timeout 30m ./edge/app/
//
// EDGE_BENCH_STREAMS sets the target (default 50,000); it is capped a thousand below RLIMIT_NOFILE's hard limit
// (20,000 on the machine of BENCHMARKS.md), which the benchmark raises its soft limit to.
//
// It reports, per held stream: RSS (the process's, after a GC, less what it was before the crowd), heap and
// stacks, goroutines, and the bytes of I/O buffers (bufio, pipes and copy buffers, estimated from the heap
// profile). Then it lets the queue move and reports how long after that every stream had heard of its new
// position (update-p50/p99/max-ms; the streams send at most one position a second by design).
func BenchmarkStreams(b *testing.B) {
	runtime.MemProfileRate = 64 << 10 // a finer sample of the heap for the buffer estimate
	limit := raiseNoFile(b)
	n := 50000
	if v, err := strconv.Atoi(os.Getenv("EDGE_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	if m := int(limit) - 1000; n > m {
		b.Logf("RLIMIT_NOFILE hard limit %d: holding %d streams instead of %d", limit, m, n)
		n = m
	}
	rdb := testRedis(b)
	ctx := context.Background()
	show := newShow(b, rdb)
	b.Cleanup(func() {
		keys, _ := rdb.Keys(ctx, rediskey.Tag(show)+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	now := time.Now()
	rdb.HSet(ctx, rediskey.ShowInfo(show), rediskey.InfoAvailable, 500, rediskey.InfoHeld, 0,
		rediskey.InfoTotalSeats, 500, rediskey.InfoSaleStartsAt, strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10),
		rediskey.InfoStartsAt, strconv.FormatInt(now.Add(48*time.Hour).UnixMilli(), 10))
	// Nobody is admitted while the crowd connects and is measured: every stream stays open.
	settings := admission.Settings{Enabled: true, AdmitPerSecond: 0.001, MaxActive: 1, TokenTTLSeconds: 600}
	admissiontest.SetSettings(b, rdb, show, settings)
	base, ops := startEdgeOps(b, map[string]string{"ADMIN_TOKEN": "adm_edge_streams_0123456789", "LOG_LEVEL": "error"})

	before := memory()
	child := exec.Command(os.Args[0], "-test.run", "^TestStreamCrowd$", "-test.v")
	child.Env = append(os.Environ(), "EDGE_STREAM_CROWD=1", "EDGE_BASE="+base, "EDGE_SHOW="+show,
		"EDGE_N="+strconv.Itoa(n))
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	start := time.Now()
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer child.Wait() //nolint:errcheck
	lines := bufio.NewScanner(stdout)
	expect := func(format string, v ...any) {
		b.Helper()
		for lines.Scan() {
			if _, err := fmt.Sscanf(lines.Text(), format, v...); err == nil {
				return
			}
		}
		b.Fatalf("the crowd ended before %q", format)
	}
	var connected, failed int
	expect("CONNECTED %d %d", &connected, &failed)
	took := time.Since(start)
	cpu0 := cpuTime()
	time.Sleep(5 * time.Second) // a few refresh rounds with everyone connected
	cpuHeld := (cpuTime() - cpu0).Seconds() / 5
	held := streamsGauge(b, ops)
	after := memory()
	if held == 0 {
		b.Fatalf("no stream held (connected %d, failed %d)", connected, failed)
	}

	// The queue moves: from the next tick on, everyone's position drops. The crowd times each stream's first
	// event showing a lower position than it started with.
	fmt.Fprintln(stdin, "MARK") // each stream's position now is the one to beat
	expect("MARKED")
	settings.AdmitPerSecond, settings.MaxActive = 20, 100000
	moved := time.Now()
	admissiontest.SetSettings(b, rdb, show, settings)
	fmt.Fprintf(stdin, "MOVED %d\n", moved.UnixNano())
	var seen, total int
	var first, p50, p99, worst float64
	expect("UPDATED %d %d %f %f %f %f", &seen, &total, &first, &p50, &p99, &worst)
	stdin.Close()
	var alive int
	expect("ALIVE %d", &alive)

	h := float64(held)
	b.ReportMetric(h, "streams")
	b.ReportMetric(float64(alive), "alive-after-update")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(float64(after.rss-before.rss)/h, "rss-B/stream")
	b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/h, "heap+stack-B/stream")
	b.ReportMetric(float64(after.stack-before.stack)/h, "stack-B/stream")
	b.ReportMetric(float64(after.buffers-before.buffers)/h, "buffers-B/stream")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/h, "goroutines/stream")
	b.ReportMetric(h/took.Seconds(), "connects/s")
	b.ReportMetric(cpuHeld*100, "cpu%-holding") // refreshes every 2 s for every stream, heartbeats, ticks
	b.ReportMetric(first, "update-first-ms")
	b.ReportMetric(p50, "update-p50-ms")
	b.ReportMetric(p99, "update-p99-ms")
	b.ReportMetric(worst, "update-max-ms")
	b.ReportMetric(float64(total-seen), "update-missed")
	b.Logf("%d streams held (%d connected, %d failed); after the queue moved %d of %d streams had their new "+
		"position, the first after %.0f ms, p50 %.0f ms, p99 %.0f ms, max %.0f ms", held, connected, failed, seen, total,
		first, p50, p99, worst)
}

// streamsGauge reads waitroom_streams from the edge's metrics.
func streamsGauge(b *testing.B, ops string) int {
	resp, err := http.Get(ops + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "waitroom_streams "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	b.Fatal("no waitroom_streams in /metrics")
	return 0
}

type mem struct {
	rss, heap, stack, buffers uint64
	goroutines                int
}

func memory() mem {
	runtime.GC()
	runtime.GC() // the second completes the heap profile's view of the first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := mem{heap: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine(), buffers: bufferBytes()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			m.rss = pages * uint64(os.Getpagesize())
		}
	}
	return m
}

// bufferBytes estimates, from the heap profile, the bytes in use in I/O buffers: those allocated under bufio's
// constructors, fasthttp's pipes and its copy buffers. Samples are scaled as pprof scales them.
func bufferBytes() uint64 {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	var total float64
	for _, r := range recs {
		if r.InUseObjects() == 0 || !isBuffer(r.Stack()) {
			continue
		}
		avg := float64(r.AllocBytes) / float64(r.AllocObjects)
		total += float64(r.InUseBytes()) / (1 - math.Exp(-avg/rate))
	}
	return uint64(total)
}

func isBuffer(stack []uintptr) bool {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		for _, p := range []string{"bufio.New", "fasthttputil.", "fasthttp.copyZeroAlloc", "fasthttp.acquireWriter",
			"fasthttp.acquireReader", "http.(*stream)", "http.streamBuffer"} {
			if strings.Contains(f.Function, p) {
				return true
			}
		}
		if !more {
			return false
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
