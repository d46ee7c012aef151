package storetest

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pair is a private Redis master with one replica, both on loopback ports, for tests of what the replica holds
// (WAIT, a promotion) without a cluster.
type Pair struct {
	Master, Replica *Redis
}

// StartPair starts a master and a replica of it (redis-server --replicaof) and waits until the replica is in
// sync; both are stopped at the end of the test. Replica.Start after Replica.Kill brings the replica back empty,
// and it syncs again (WaitSynced).
func StartPair(t TB) *Pair {
	t.Helper()
	m := StartRedis(t)
	host, port, _ := net.SplitHostPort(m.Addr)
	p := &Pair{Master: m, Replica: StartRedis(t, "--replicaof", host, port)}
	p.WaitSynced(t, 10*time.Second)
	return p
}

// WaitSynced waits until the master counts its replica online and the replica's link to it is up.
func (p *Pair) WaitSynced(t TB, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	m := redis.NewClient(&redis.Options{Addr: p.Master.Addr})
	r := redis.NewClient(&redis.Options{Addr: p.Replica.Addr})
	defer m.Close()
	defer r.Close()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		mi, _ := m.Info(ctx, "replication").Result()
		ri, _ := r.Info(ctx, "replication").Result()
		if strings.Contains(mi, "connected_slaves:1") && strings.Contains(mi, "state=online") &&
			strings.Contains(ri, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("storetest: the replica %s of %s did not sync within %s", p.Replica.Addr, p.Master.Addr, within)
		}
	}
}
