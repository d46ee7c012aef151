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
	"runtime/pprof"
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
//
// Then the queue keeps moving for EDGE_BENCH_WINDOW (default 10s), every stream getting a position event about
// once a second, and it reports what those events cost: events/s (read by the crowd), edge-us/event (this
// process's CPU time, user + system from getrusage, over the window, per event read), edge-sys-us/event (the
// part of it spent in the kernel), fan-us/event (the crowd's process, the same way) and cores-100k: the CPU
// 100,000 streams at one event a second need for the fan-out alone, 100,000 × (edge + fan µs) / 1e6, in cores of
// the machine it ran on. EDGE_BENCH_WINDOW_PROFILE=FILE writes a CPU profile of this process over the window
// alone:
//
//	EDGE_BENCH_STREAMS=5000 EDGE_BENCH_WINDOW_PROFILE=/tmp/streams.prof \
//	  go test -run '^$' -bench Streams -benchtime 1x ./edge/app/
//
// Redis's CPU is in neither process; the window's edge CPU includes the admission ticks and heartbeats, which
// grow with the crowd as the events do. On the 2-CPU machine of BENCHMARKS.md (5,000 streams, 2026-11-24, median
// of five runs) an event cost the edge 16.4 µs (11.9 of them in the kernel, its write) and the fans 6.0 µs:
// cores-100k 2.2, more than the machine's two cores for the stadium's fan-out alone.
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
	fmt.Fprintln(stdin, "ALIVE")
	var alive int
	expect("ALIVE %d", &alive)

	// The queue keeps moving: every tick changes every position, so each stream gets one position event a
	// second. Both processes' CPU over a window, per event the crowd read, is what the fan-out costs.
	window := 10 * time.Second
	if v, err := time.ParseDuration(os.Getenv("EDGE_BENCH_WINDOW")); err == nil && v > 0 {
		window = v
	}
	fmt.Fprintln(stdin, "WINDOW")
	expect("WINDOW")
	stopProfile := func() {}
	if path := os.Getenv("EDGE_BENCH_WINDOW_PROFILE"); path != "" {
		stopProfile = windowProfile(b, path)
	}
	user0, sys0 := cpuTimes()
	at0 := time.Now()
	time.Sleep(window)
	user1, sys1 := cpuTimes()
	elapsed := time.Since(at0)
	edgeCPU, edgeSys := user1-user0+sys1-sys0, sys1-sys0
	stopProfile()
	fmt.Fprintln(stdin, "WINDOWED")
	var events, fanCPU, fanElapsed int64
	expect("WINDOWED %d %d %d", &events, &fanCPU, &fanElapsed)
	stdin.Close()
	if events == 0 {
		b.Fatal("no event reached the crowd while the queue moved")
	}
	edgeUS := float64(edgeCPU.Microseconds()) / float64(events)
	fanUS := float64(fanCPU) / 1e3 / float64(events)

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
	b.ReportMetric(float64(events)/time.Duration(fanElapsed).Seconds(), "events/s")
	b.ReportMetric(edgeUS, "edge-us/event")
	// The kernel's share (the write system calls, mostly), which no change to the edge's Go code makes smaller.
	b.ReportMetric(float64(edgeSys.Microseconds())/float64(events), "edge-sys-us/event")
	b.ReportMetric(fanUS, "fan-us/event")
	// The stadium: 100,000 streams at one event a second, in cores of this machine, for the fan-out alone.
	b.ReportMetric(100000*(edgeUS+fanUS)/1e6, "cores-100k")
	b.Logf("%d streams held (%d connected, %d failed); after the queue moved %d of %d streams had their new "+
		"position, the first after %.0f ms, p50 %.0f ms, p99 %.0f ms, max %.0f ms", held, connected, failed, seen, total,
		first, p50, p99, worst)
	b.Logf("while the queue moved for %s: %d events read, %.0f/s; edge %.1f µs CPU per event (%.0f%% of a core), "+
		"fans %.1f µs (%.0f%%); 100,000 streams at one event a second would need %.2f cores for the fan-out alone",
		elapsed.Round(time.Millisecond), events, float64(events)/time.Duration(fanElapsed).Seconds(), edgeUS,
		100*edgeCPU.Seconds()/elapsed.Seconds(), fanUS, 100*float64(fanCPU)/float64(fanElapsed),
		100000*(edgeUS+fanUS)/1e6)
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
	user, sys := cpuTimes()
	return user + sys
}

// cpuTimes is this process's CPU time so far, in user space and in the kernel.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// windowProfile writes a CPU profile of the edge's process to path until stop is called: the window alone, not
// the connection burst before it that go test's -cpuprofile would also take in.
func windowProfile(b *testing.B, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
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
