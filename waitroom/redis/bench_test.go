package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// The benchmarks below need a queue of a million fans; they run only with -bench, e.g.
//
//	go test -run '^$' -bench . -benchtime 20000x ./waitroom/redis/
//
// Each reports its rate next to redis-benchmark's raw ZADD rate measured on the same machine in the same run,
// so the numbers read as a ratio to what this Redis can do at all.

const queued = 1_000_000

// fillQueue puts a million fans in show's queue after opening (tickets 1..1e6, live heartbeats), in pipelined
// batches, as if they had joined.
func fillQueue(b *testing.B, rdb goredis.UniversalClient, show string) {
	b.Helper()
	ctx := context.Background()
	now := float64(time.Now().Add(time.Hour).UnixMilli()) // heartbeats stay fresh for the whole run
	const batch = 10000
	for start := 0; start < queued; start += batch {
		wait := make([]goredis.Z, 0, batch)
		hb := make([]goredis.Z, 0, batch)
		for i := start; i < start+batch; i++ {
			u := "q" + strconv.Itoa(i)
			wait = append(wait, goredis.Z{Score: float64(i + 1), Member: u})
			hb = append(hb, goredis.Z{Score: now, Member: u})
		}
		p := rdb.Pipeline()
		p.ZAdd(ctx, wrredis.Wait(show), wait...)
		p.ZAdd(ctx, wrredis.Heartbeat(show), hb...)
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	// The ticket ceiling is what admit.lua takes as proof that the queue's state is here (else it answers
	// "restore"); every ticket is handed out already, so it is the last one.
	if err := rdb.HSet(ctx, wrredis.State(show), "lastSeq", queued, "ceiling", queued, "drawn", "1").Err(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the CPU this process has used, user and system (not its children: redis-benchmark).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var rpsRe = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmarkZADD runs redis-benchmark's raw ZADD on a throwaway key of show's slot and returns its rate.
func redisBenchmarkZADD(b *testing.B, rdb goredis.UniversalClient, show string, clients int) float64 {
	b.Helper()
	key := wrredis.Wait(show) + ":redis-benchmark"
	defer rdb.Del(context.Background(), key)
	single, ok := rdb.(*goredis.Client)
	if !ok {
		b.Skip("redis-benchmark measures a single Redis")
	}
	opts := single.Options()
	host, port := "127.0.0.1", "6379"
	if h, p, ok := bytes.Cut([]byte(opts.Addr), []byte(":")); ok {
		host, port = string(h), string(p)
	}
	cmd := exec.Command("redis-benchmark", "-h", host, "-p", port, "-q", "-n", "200000", "-r", "1000000",
		"-c", strconv.Itoa(clients), "zadd", key, "__rand_int__", "__rand_int__")
	out, err := cmd.Output()
	if err != nil {
		b.Skipf("redis-benchmark: %v", err)
	}
	m := rpsRe.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		b.Fatalf("redis-benchmark output: %q", out)
	}
	rps, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	return rps
}

// BenchmarkJoin measures joins per second into a queue already holding a million fans, with many concurrent
// joiners (as a flash crowd arrives), against redis-benchmark's ZADD.
func BenchmarkJoin(b *testing.B) {
	rdb := client(b)
	show := newShow(b, rdb)
	configure(b, rdb, show, 100, 1000, 600)
	fillQueue(b, rdb, show)
	svc := newService(b, rdb, issuer(b), waitroom.Options{})
	ctx := context.Background()
	var n atomic.Int64
	join := func() error {
		p, err := svc.Join(ctx, show, "j"+strconv.FormatInt(n.Add(1), 10))
		if err != nil {
			return err
		}
		if p.Position <= queued {
			return fmt.Errorf("joined at position %d in front of the million", p.Position)
		}
		return nil
	}
	// Warm up as redis-benchmark does before its clock starts: its 50 clients are connected first, and so are
	// the joiners' connections here (and the script is in Redis's cache), so the timed joins are steady state.
	var warm errgroup.Group
	for range 50 {
		warm.Go(join)
	}
	if err := warm.Wait(); err != nil {
		b.Fatal(err)
	}
	// The baseline is measured right before and right after the joins and averaged: on a shared machine the load
	// drifts, and a single baseline taken seconds earlier made the ratio swing with it.
	before := redisBenchmarkZADD(b, rdb, show, 50)
	b.SetParallelism(25) // 50 joiners on 2 cores, like redis-benchmark's 50 clients
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := join(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	rate := float64(b.N) / time.Since(start).Seconds()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	baseline := (before + redisBenchmarkZADD(b, rdb, show, 50)) / 2
	// This process's CPU per join (the client side: the service, go-redis, the runtime), which the load of
	// other processes on the machine barely moves, unlike the rates.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/join")
	b.ReportMetric(rate, "joins/s")
	b.ReportMetric(baseline, "zadd/s")
	b.ReportMetric(rate/baseline, "join/zadd")
}

// BenchmarkAdmitTick measures one admission tick (the admit.lua pop-and-issue plus signing and storing the
// tokens) that admits up to 100 fans from the head of a million-fan queue.
func BenchmarkAdmitTick(b *testing.B) {
	rdb := client(b)
	show := newShow(b, rdb)
	configure(b, rdb, show, 100000, 10_000_000, 600)
	fillQueue(b, rdb, show)
	svc := newService(b, rdb, issuer(b), waitroom.Options{MaxScan: 100})
	ctx := context.Background()
	baseline := redisBenchmarkZADD(b, rdb, show, 1)
	if _, err := svc.Tick(ctx, show, false); err != nil { // starts the tick clock
		b.Fatal(err)
	}
	var admitted int64
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		time.Sleep(time.Millisecond) // at 100,000/s, 1 ms of credit is 100 fans
		snap, err := svc.Tick(ctx, show, false)
		if err != nil {
			b.Fatal(err)
		}
		admitted += int64(len(snap.Grants))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	per := (elapsed - time.Duration(b.N)*time.Millisecond).Seconds() / float64(b.N)
	b.ReportMetric(per*1e6, "µs/tick")
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/tick")
	b.ReportMetric(float64(admitted)/elapsed.Seconds(), "admitted/s")
	b.ReportMetric(baseline, "zadd1c/s")
	b.ReportMetric(per*baseline, "tick/zadd")
}

// BenchmarkAdmitScript is admit.lua alone (no signing): the Redis side of a 100-fan tick.
func BenchmarkAdmitScript(b *testing.B) {
	rdb := client(b)
	show := newShow(b, rdb)
	configure(b, rdb, show, 100000, 10_000_000, 600)
	fillQueue(b, rdb, show)
	store := wrredis.New(rdb)
	ctx := context.Background()
	if _, err := store.Admit(ctx, show, "n0", time.Minute, 100); err != nil {
		b.Fatal(err)
	}
	var admitted int64
	var inScript time.Duration
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(time.Millisecond)
		t0 := time.Now()
		snap, err := store.Admit(ctx, show, "n"+strconv.Itoa(i+1), time.Minute, 100)
		inScript += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		admitted += int64(len(snap.Grants))
	}
	b.StopTimer()
	b.ReportMetric(float64(inScript.Microseconds())/float64(b.N), "µs/tick")
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/tick")
}

// BenchmarkDraw measures the opening draw of a million pre-opening fans (read the pool, order by HMAC, write the
// tickets): how long joins after opening wait. Run with -benchtime 1x.
func BenchmarkDraw(b *testing.B) {
	rdb := client(b)
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		show := newShow(b, rdb)
		configure(b, rdb, show, 100, 1000, 600)
		for start := 0; start < queued; start += 10000 {
			members := make([]any, 0, 10000)
			for i := start; i < start+10000; i++ {
				members = append(members, "p"+strconv.Itoa(i))
			}
			if err := rdb.SAdd(ctx, wrredis.Pre(show), members...).Err(); err != nil {
				b.Fatal(err)
			}
		}
		showInfo(b, rdb, show, map[string]any{"saleStartsAt": ms(time.Now().Add(-time.Second))})
		svc := newService(b, rdb, issuer(b), waitroom.Options{})
		if _, err := wrredis.New(rdb).Seed(ctx, show, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := svc.Draw(ctx, show); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/draw")
		b.StopTimer()
		if n, _ := rdb.ZCard(ctx, wrredis.Wait(show)).Result(); n != queued {
			b.Fatalf("%d tickets, want %d", n, queued)
		}
		b.StartTimer()
	}
}
