package storetest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a private Redis Cluster on loopback: masters with replicas, each a Redis of its own, started from
// the machine's redis-server and joined by redis-cli --cluster create. Its node timeout is short (1 s), so a
// killed master's replica takes over within seconds, as in a test of failover.
type Cluster struct {
	Nodes []*Redis // masters first as created; after a failover the roles may have moved
	Addrs []string // every node's host:port, for REDIS_CLUSTER_ADDRS and redis.ClusterOptions.Addrs
}

// StartCluster starts masters × (1 + replicas) redis-servers (e.g. 3 and 1: the six-node cluster of a real
// deployment) with keyspace notifications for expiries on, joins them into a cluster, waits until every node
// says the cluster is ok, and stops them all at the end of the test.
func StartCluster(t TB, masters, replicas int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("storetest: redis-cli is not installed (it comes with redis-server): %v", err)
	}
	c := &Cluster{}
	for range masters * (1 + replicas) {
		r := StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
			"--notify-keyspace-events", "Ex")
		c.Nodes = append(c.Nodes, r)
		c.Addrs = append(c.Addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("storetest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(t, 30*time.Second)
	return c
}

// Client returns a cluster client on the cluster's nodes, closed at the end of the test.
func (c *Cluster) Client(t TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// WaitHealthy waits until every live node reports cluster_state:ok, every slot is served, and every slot's
// master is a live node: after a master is killed, until its replica has taken over.
func (c *Cluster) WaitHealthy(t TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	live := map[string]bool{}
	for _, n := range c.Nodes {
		live[n.Addr] = n.Running()
	}
	for {
		ok := true
		for _, n := range c.Nodes {
			if !live[n.Addr] {
				continue
			}
			rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
			ctx := context.Background()
			info, err := rdb.ClusterInfo(ctx).Result()
			slots, serr := rdb.ClusterSlots(ctx).Result()
			_ = rdb.Close()
			if err != nil || serr != nil || !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, "cluster_slots_ok:16384") {
				ok = false
				break
			}
			for _, s := range slots {
				if len(s.Nodes) == 0 || !live[s.Nodes[0].Addr] {
					ok = false
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("storetest: cluster not healthy after %s", within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MasterOf returns the node that serves key's slot now.
func (c *Cluster) MasterOf(t TB, key string) *Redis {
	t.Helper()
	ctx := context.Background()
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			_ = rdb.Close()
			continue
		}
		slots, err := rdb.ClusterSlots(ctx).Result()
		_ = rdb.Close()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				for _, m := range c.Nodes {
					if m.Addr == s.Nodes[0].Addr {
						return m
					}
				}
			}
		}
	}
	t.Fatalf("storetest: no node serves %q", key)
	return nil
}
