package redis_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// replicated is a Redis whose masters have a replica each: on the cluster pass the package's cluster (three
// masters, one replica each), else a private master and replica on loopback ports (pair, nil on the cluster).
func replicated(t testing.TB) (goredis.UniversalClient, *storetest.Pair) {
	t.Helper()
	if redistest.Pass() == redistest.Cluster {
		return client(t), nil
	}
	p := storetest.StartPair(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: p.Master.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, p
}

// waitingStore is a store on rdb whose joins wait for one replica.
func waitingStore(t testing.TB, rdb goredis.UniversalClient, timeout time.Duration) *wrredis.Store {
	t.Helper()
	s := wrredis.New(rdb)
	if err := s.WaitReplicas(1, timeout); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJoinWaitsForItsReplica: with WaitReplicas on, a join is answered only once its ticket is on the replica;
// with the replica gone, the join is not acknowledged (ErrUnavailable: a 503 the fan retries) while an admitted
// fan's is, and the fan's retry once the replica is back finds the place the first try took, now on the replica
// too.
func TestJoinWaitsForItsReplica(t *testing.T) {
	if redistest.Pass() == redistest.Cluster {
		t.Skip("a private master and replica: the same on either pass")
	}
	t.Parallel()
	ctx := context.Background()
	rdb, pair := replicated(t)
	replica := goredis.NewClient(&goredis.Options{Addr: pair.Replica.Addr})
	defer replica.Close()
	show := newShow(t, rdb)
	configure(t, rdb, show, 10, 100, 600)
	openSale(t, rdb, show)
	svc := newServiceOn(t, waitingStore(t, rdb, time.Second), rdb, issuer(t), waitroom.Options{})

	a, err := svc.Join(ctx, show, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := replica.ZScore(ctx, wrredis.Wait(show), "a").Result(); err != nil || int64(got) != a.Seq {
		t.Fatalf("the replica holds ticket %v (%v) of fan a when its join is answered, want %d", got, err, a.Seq)
	}

	admitNext(t, svc, show, "a")

	pair.Replica.Kill()
	if _, err := svc.Join(ctx, show, "b"); !errors.Is(err, waitroom.ErrUnavailable) {
		t.Fatalf("a join no replica acknowledged answered %v, want ErrUnavailable", err)
	}
	// An admission is durable by its record, not by the replica: the admitted fan is still let in.
	if p, err := svc.Join(ctx, show, "a"); err != nil || p.Status != waitroom.Admitted {
		t.Fatalf("the admitted fan's join with no replica answered %+v, %v; want admitted", p, err)
	}
	taken, err := rdb.ZScore(ctx, wrredis.Wait(show), "b").Result()
	if err != nil {
		t.Fatalf("the unacknowledged join left no place on the master: %v", err)
	}

	pair.Replica.Start() // empty: it syncs from the master again
	pair.WaitSynced(t, 10*time.Second)
	b, err := svc.Join(ctx, show, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Seq != int64(taken) || b.Seq != a.Seq+1 {
		t.Fatalf("the retry got ticket %d, want the %d its first try took (after a's %d)", b.Seq, int64(taken), a.Seq)
	}
	if got, err := replica.ZScore(ctx, wrredis.Wait(show), "b").Result(); err != nil || int64(got) != b.Seq {
		t.Fatalf("the replica holds ticket %v (%v) of fan b when its retry is answered, want %d", got, err, b.Seq)
	}
}

// TestConcurrentJoinsShareWaits: many fans joining at once with WaitReplicas on each get one ticket, every ticket
// on the replica when its join is answered, and the joins share their WAITs: a few per batch of joins, not one
// per join.
func TestConcurrentJoinsShareWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, pair := replicated(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 10, 100, 600)
	openSale(t, rdb, show)
	svc := newServiceOn(t, waitingStore(t, rdb, time.Second), rdb, issuer(t), waitroom.Options{})
	var replica *goredis.Client
	if pair != nil {
		replica = goredis.NewClient(&goredis.Options{Addr: pair.Replica.Addr})
		defer replica.Close()
	}

	const fans = 300
	waits0 := waitCalls(t, rdb)
	seqs := make([]int64, fans)
	var wg sync.WaitGroup
	errs := make(chan error, fans)
	for i := range fans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := "w" + strconv.Itoa(i)
			p, err := svc.Join(ctx, show, u)
			if err != nil {
				errs <- err
				return
			}
			seqs[i] = p.Seq
			if replica != nil {
				if got, err := replica.ZScore(ctx, wrredis.Wait(show), u).Result(); err != nil || int64(got) != p.Seq {
					errs <- errors.New("fan " + u + " was answered a ticket its replica does not hold")
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, s := range seqs {
		if s < 1 || s > fans || seen[s] {
			t.Fatalf("fan %d: ticket %d, want one of 1..%d of its own", i, s, fans)
		}
		seen[s] = true
	}
	if waits := waitCalls(t, rdb) - waits0; waits == 0 || waits > fans/3 {
		t.Errorf("%d joins sent %d WAITs, want at least one and at most a third as many", fans, waits)
	}
}

var waitStatRe = regexp.MustCompile(`(?m)^cmdstat_wait:calls=(\d+)`)

// waitCalls is how many WAIT commands rdb's masters have run.
func waitCalls(t testing.TB, rdb goredis.UniversalClient) int {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	total := 0
	count := func(ctx context.Context, c *goredis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		if m := waitStatRe.FindStringSubmatch(info); m != nil {
			n, _ := strconv.Atoi(m[1])
			mu.Lock()
			total += n
			mu.Unlock()
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, count)
	case *goredis.Client:
		err = count(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// TestDrawWaitsForItsReplica: with WaitReplicas on, the opening draw reads the pool and is done only with the
// replica holding what it read and wrote: with the replica gone it fails (ErrUnavailable, tried again by the
// next join or tick), and once the replica is back it completes, the replica holding every drawn ticket.
func TestDrawWaitsForItsReplica(t *testing.T) {
	if redistest.Pass() == redistest.Cluster {
		t.Skip("a private master and replica: the same on either pass")
	}
	t.Parallel()
	ctx := context.Background()
	rdb, pair := replicated(t)
	replica := goredis.NewClient(&goredis.Options{Addr: pair.Replica.Addr})
	defer replica.Close()
	show := newShow(t, rdb)
	configure(t, rdb, show, 10, 100, 600)
	svc := newServiceOn(t, waitingStore(t, rdb, time.Second), rdb, issuer(t), waitroom.Options{})
	opens := time.Now().Add(3 * time.Second) // 1 s was over before five joins at load 30
	showInfo(t, rdb, show, map[string]any{rediskey.InfoSaleStartsAt: ms(opens)})
	for _, u := range users("p", 5) {
		if p, err := svc.Join(ctx, show, u); err != nil || p.Seq != 0 {
			t.Fatalf("pre-opening join %s: %+v, %v", u, p, err)
		}
	}
	time.Sleep(time.Until(opens) + 50*time.Millisecond)

	pair.Replica.Kill()
	if err := svc.Draw(ctx, show); !errors.Is(err, waitroom.ErrUnavailable) {
		t.Fatalf("a draw with no replica answered %v, want ErrUnavailable", err)
	}
	pair.Replica.Start()
	pair.WaitSynced(t, 10*time.Second)
	if err := svc.Draw(ctx, show); err != nil {
		t.Fatal(err)
	}
	if n, err := replica.ZCard(ctx, wrredis.Wait(show)).Result(); err != nil || n != 5 {
		t.Fatalf("the replica holds %d drawn tickets (%v) when the draw is done, want 5", n, err)
	}
	if d, err := replica.HGet(ctx, wrredis.State(show), "drawn").Result(); err != nil || d != "1" {
		t.Fatalf("the replica's draw mark is %q (%v) when the draw is done, want 1", d, err)
	}
}
