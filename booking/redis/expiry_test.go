package redis_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/redis"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/infra/testparallel"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// The tests wait on expiries and Redis far more than they compute: eight at once.
func TestMain(m *testing.M) {
	testparallel.AtLeast(8)
	os.Exit(redistest.RunEach(m))
}

// On a Redis Cluster every master reports only its own keys' expiries: booking hears the seat locks of shows on
// every master, and after a master fails and its replica takes over, the new master's too.
func TestWatchExpiriesOnCluster(t *testing.T) {
	t.Parallel()
	if redistest.Pass() != redistest.Single {
		t.Skip("it starts a cluster of its own, to kill a master: once per package run is enough")
	}
	cluster := storetest.StartCluster(t, 3, 1)
	rdb, err := driver.OpenRedis("", cluster.Addrs, 0) // booking's own cluster client
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// One show on each master.
	shows := map[string]string{} // master address -> show
	for len(shows) < 3 {
		show := booking.NewID("sh_")
		m := cluster.MasterOf(t, rediskey.Seat(show, "A1"))
		if _, ok := shows[m.Addr]; !ok {
			shows[m.Addr] = show
		}
	}
	var mu sync.Mutex
	heard := map[string]bool{} // show/seat
	go redis.WatchExpiries(ctx, rdb, func(show, seat string) {
		mu.Lock()
		heard[show+"/"+seat] = true
		mu.Unlock()
	})
	// expire sets a short lock and waits until its expiry is heard, touching the key so its master notices it.
	expire := func(show, seat string, within time.Duration) {
		t.Helper()
		key := rediskey.Seat(show, seat)
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			ok := heard[show+"/"+seat]
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the expiry of %s on %s was not heard within %s", seat, show, within)
			}
			if n, _ := rdb.Exists(ctx, key).Result(); n == 0 {
				rdb.Set(ctx, key, "bk|1", 30*time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			rdb.Get(ctx, key)
		}
	}
	for _, show := range shows {
		expire(show, "A1", 10*time.Second)
	}

	// Fail one master: its replica is promoted, and its keys' expiries are heard from the new master.
	var failed string
	for addr, show := range shows {
		failed = show
		for _, n := range cluster.Nodes {
			if n.Addr == addr {
				n.Kill()
			}
		}
		break
	}
	cluster.WaitHealthy(t, 30*time.Second)
	expire(failed, "B2", 15*time.Second)
}
