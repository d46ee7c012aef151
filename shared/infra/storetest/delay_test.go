package storetest_test

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// TestDelayProxy: through the proxy a private Redis answers as usual; with a delay set every round trip takes at
// least the delay, round trips of parallel connections and commands pipelined on one connection wait side by side
// rather than one after the other; set back to zero, the delay is gone; and Close ends every connection.
func TestDelayProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := storetest.StartRedis(t)
	p := storetest.StartDelayProxy(t, r.Addr)
	rdb := goredis.NewClient(&goredis.Options{Addr: p.Addr, PoolSize: 16, MaxRetries: -1})
	defer rdb.Close()
	ping := func() time.Duration {
		t.Helper()
		began := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping through the proxy: %v", err)
		}
		return time.Since(began)
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("get through the proxy: %q %v", got, err)
	}

	const delay = 400 * time.Millisecond
	p.SetDelay(delay)
	if took := ping(); took < delay {
		t.Errorf("a round trip with a %s delay took %s", delay, took)
	}
	// Sixteen connections at once: if the delay were served one chunk at a time, they would take 16 delays. The
	// bounds are half of that, not "about one delay": on a loaded machine the 16 goroutines themselves wait for a core.
	began := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { ping() })
	}
	wg.Wait()
	if took := time.Since(began); took < delay || took > 8*delay {
		t.Errorf("16 parallel round trips with a %s delay took %s, want about one delay", delay, took)
	}
	// Five commands on one connection, 20 ms apart, without waiting for the answers: about one delay in all, and
	// well under the five delays that one after another would take.
	conn, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began = time.Now()
	for range 5 {
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rd := bufio.NewReader(conn)
	for i := range 5 {
		if line, err := rd.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("answer %d on one connection: %q %v", i+1, line, err)
		}
	}
	if took := time.Since(began); took < delay || took > 3*delay {
		t.Errorf("five pipelined round trips with a %s delay took %s, want about one delay", delay, took)
	}

	p.SetDelay(0)
	if took := ping(); took >= delay {
		t.Errorf("a round trip after the delay was removed took %s", took)
	}

	p.Close()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("a command through a closed proxy succeeded")
	}
	if _, err := rd.ReadString('\n'); err == nil {
		t.Error("a connection through a closed proxy stayed open")
	}
	p.Close() // a second Close (the test's cleanup makes one too) is harmless
}

// TestDelayProxyServiceTime: with a service time set, chunks from every connection pass one at a time: one round
// trip alone takes about the service time, twenty at once on twenty connections about twenty of them, as a store
// of limited throughput answers; with the service time removed round trips are fast again.
func TestDelayProxyServiceTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := storetest.StartRedis(t)
	p := storetest.StartDelayProxy(t, r.Addr)
	const conns = 20
	rdb := goredis.NewClient(&goredis.Options{Addr: p.Addr, PoolSize: conns, MinIdleConns: conns, MaxRetries: -1})
	defer rdb.Close()
	pings := func(n int) time.Duration {
		t.Helper()
		began := time.Now()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if err := rdb.Ping(ctx).Err(); err != nil {
					t.Errorf("ping through the proxy: %v", err)
				}
			})
		}
		wg.Wait()
		return time.Since(began)
	}
	// Every connection dialled and greeted before the lane opens: a handshake would be chunks of its own.
	for deadline := time.Now().Add(10 * time.Second); rdb.PoolStats().IdleConns < conns; pings(conns) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool has %d idle connections, want %d", rdb.PoolStats().IdleConns, conns)
		}
	}

	// The quickest of five, one after another: a loaded machine may stall any one of them.
	quickest := func() time.Duration {
		alone := pings(1)
		for range 4 {
			alone = min(alone, pings(1))
		}
		return alone
	}
	// What the machine adds to a round trip, measured beside the service time rather than assumed small.
	base, baseAll := quickest(), pings(conns)
	const d = 10 * time.Millisecond
	p.SetServiceTime(d)
	if alone := quickest(); alone < d || alone > base+5*d {
		t.Errorf("one round trip alone with a %s service time took %s, want about one service time", d, alone)
	}
	// The lane serves one chunk at a time: the last of twenty waits for the nineteen ahead of it.
	with := pings(conns)
	if with < conns*d || with > baseAll+3*conns*d {
		t.Errorf("%d parallel round trips with a %s service time took %s, want about %s", conns, d, with, conns*d)
	}
	p.SetServiceTime(0)
	if took := pings(conns); took >= with {
		t.Errorf("%d parallel round trips after the service time was removed took %s, as long as with it (%s)", conns, took, with)
	}
	if p.Chunks() == 0 {
		t.Error("the proxy counted no chunk")
	}
}
