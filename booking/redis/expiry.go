package redis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/driver"
)

// expiredPattern is the keyevent channel of expirations in any database.
const expiredPattern = "__keyevent@*__:expired"

// topologyInterval is how often a cluster's masters are listed again, so the expiries of a master that took over
// from a failed one (or joined in a resharding) are heard within a few seconds.
const topologyInterval = 2 * time.Second

// WatchExpiries calls fn for every seat lock that Redis expires, from keyspace notifications
// (notify-keyspace-events with E and x), until ctx ends. With notifications off nothing arrives, and the
// reconciler's periodic sweep does the work instead.
//
// Keyspace notifications are local to the node whose key expired; unlike PUBLISH they are not broadcast across
// a Redis Cluster. On a cluster, then, every master gets its own subscription, and the set of masters is read
// again every topologyInterval: a failover's new master is subscribed to, and a node that is no longer a master
// is let go.
func WatchExpiries(ctx context.Context, rdb redis.UniversalClient, fn func(showID, seatID string)) {
	handle := func(msg *redis.Message) {
		if show, seat, ok := ParseSeatKey(msg.Payload); ok {
			fn(show, seat)
		}
	}
	cluster, ok := rdb.(*redis.ClusterClient)
	if !ok {
		driver.Listen(ctx, rdb, driver.Listener{Patterns: []string{expiredPattern}, Message: handle})
		return
	}
	watchMasters(ctx, cluster, handle)
}

// watchMasters keeps one expiry subscription per master of cluster until ctx ends.
func watchMasters(ctx context.Context, cluster *redis.ClusterClient, handle func(*redis.Message)) {
	opt := cluster.Options()
	type sub struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	subs := map[string]sub{}
	defer func() {
		for _, s := range subs {
			s.cancel()
			<-s.done
		}
	}()
	refresh := func() {
		masters, err := masterAddrs(ctx, cluster)
		if err != nil {
			return // the cluster is unreachable or changing: keep what we have and look again soon
		}
		for addr, s := range subs {
			if !masters[addr] {
				s.cancel()
				<-s.done
				delete(subs, addr)
			}
		}
		for addr := range masters {
			if _, ok := subs[addr]; ok {
				continue
			}
			node := redis.NewClient(&redis.Options{Addr: addr, Username: opt.Username, Password: opt.Password,
				TLSConfig: opt.TLSConfig, Dialer: opt.Dialer})
			sctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer node.Close()
				// Listen returns when the refresh below cancels sctx (the node is no longer a master); a lost
				// connection to a node that still is one is restored by go-redis within Listen.
				driver.Listen(sctx, node, driver.Listener{Patterns: []string{expiredPattern}, Message: handle})
			}()
			subs[addr] = sub{cancel: cancel, done: done}
		}
		for addr, s := range subs {
			select {
			case <-s.done: // its node went away: forget it, so the next refresh may subscribe again
				s.cancel()
				delete(subs, addr)
			default:
			}
		}
	}
	every(ctx, topologyInterval, refresh)
}

// masterAddrs asks the cluster which nodes serve slots now (the first node of each slot range is its master).
// It asks a node directly rather than reading the client's cached view, which learns of a failover only lazily.
func masterAddrs(ctx context.Context, cluster *redis.ClusterClient) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	slots, err := cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	addrs := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			addrs[s.Nodes[0].Addr] = true
		}
	}
	return addrs, nil
}
