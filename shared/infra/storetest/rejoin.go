package storetest

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rejoin brings a killed node back as a replica of master, as an operator (or an orchestrator restarting the
// dead pod) would after a failover: the node starts again empty on its address, as a new cluster node (its old
// identity is forgotten by every live node), meets the cluster, replicates master, and Rejoin returns once master
// counts it as an online replica. Until then master has no replica: a failover left it alone.
func (c *Cluster) Rejoin(t TB, node, master *Redis, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	m := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer m.Close()
	masterID, err := m.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatalf("storetest: cluster myid of %s: %v", master.Addr, err)
	}
	// The dead node's identity, as the live nodes know it (flagged fail), is forgotten so that the cluster does
	// not keep a failed node on the address the new one takes.
	nodes, _ := m.ClusterNodes(ctx).Result()
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[1], node.Addr+"@") || !strings.Contains(f[2], "fail") {
			continue
		}
		for _, n := range c.Nodes {
			if n != node && n.Running() {
				forget(ctx, n.Addr, f[0])
			}
		}
	}
	node.Start()
	r := redis.NewClient(&redis.Options{Addr: node.Addr})
	defer r.Close()
	host, port, _ := net.SplitHostPort(master.Addr)
	if err := r.Do(ctx, "cluster", "meet", host, port).Err(); err != nil {
		t.Fatalf("storetest: cluster meet from %s: %v", node.Addr, err)
	}
	// REPLICATE needs the new node to know master, which gossip brings within a moment.
	for err = r.ClusterReplicate(ctx, masterID).Err(); err != nil; err = r.ClusterReplicate(ctx, masterID).Err() {
		if time.Now().After(deadline) {
			t.Fatalf("storetest: %s cannot replicate %s: %v", node.Addr, master.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nodeHost, nodePort, _ := net.SplitHostPort(node.Addr)
	for {
		info, _ := m.Info(ctx, "replication").Result()
		if strings.Contains(info, "ip="+nodeHost+",port="+nodePort+",state=online") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("storetest: %s is not an online replica of %s after %s:\n%s", node.Addr, master.Addr, within, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func forget(ctx context.Context, addr, id string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	_ = rdb.ClusterForget(ctx, id).Err()
}
