// Package redistest gives each test its own corner of a real Redis: a client on the package's target (REDIS_URL's
// single Redis, or a six-node Redis Cluster started from the machine's redis-server), a unique key prefix, and
// the deletion of every key under that prefix when the test ends. Nothing is flushed: tests of many packages
// share one Redis at once.
//
// The prefix goes inside show ids, never in front of whole keys: every key of a show is built by package
// rediskey around the hash tag {show:ID}, so a show named with the prefix keeps all its keys in one cluster slot,
// as the Lua scripts need. A test writes under its prefix by naming its shows (and any other id that ends up in
// a key) with ID.
//
// A package's TestMain chooses how its tests meet the cluster:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.RunEach(m)) } // every test on each target (storage tests)
//	func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }     // single Redis; Each and Prefer on request
//
// Either way the package starts at most one cluster, on first use, shared by its tests and stopped after them.
// REDIS_TEST_TARGETS ("single", "cluster" or "single,cluster", the default) narrows the targets;
// REDIS_TEST_CLUSTER_ADDRS points the cluster target at a running cluster instead of starting one.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// Target is the kind of Redis a test runs against.
type Target string

const (
	Single  Target = "single"  // REDIS_URL, default redis://127.0.0.1:6379/0
	Cluster Target = "cluster" // three masters with a replica each
)

// DefaultURL is the single Redis used when REDIS_URL is not set; it matches `make services`.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Redis is one test's view of its target.
type Redis struct {
	Client goredis.UniversalClient // closed at the end of the test
	Prefix string                  // unique to the test; every key containing it is deleted at the end
	Target Target
	URL    string   // the single Redis's URL; empty on a cluster
	Addrs  []string // the cluster's nodes; empty on a single Redis
}

// ID returns name under the test's prefix: a show id (or any id that ends up in a key) whose keys the test's
// cleanup deletes.
func (r *Redis) ID(name string) string { return r.Prefix + name }

// Env is the environment an app's LoadConfig reads to reach the same Redis: REDIS_URL, or REDIS_CLUSTER_ADDRS.
func (r *Redis) Env() map[string]string {
	if r.Target == Cluster {
		return map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(r.Addrs, ",")}
	}
	return map[string]string{"REDIS_URL": r.URL}
}

// New returns a client on the package's current target: the cluster during RunEach's cluster pass, else the
// single Redis. The client and the test's keys are gone when the test ends.
func New(t testing.TB) *Redis {
	t.Helper()
	return On(t, Pass())
}

// Prefer returns a client on target when REDIS_TEST_TARGETS includes it (the cluster: the package's shared one),
// else on the first target there is: for a test too costly to run on each, run on the one it would add most on.
func Prefer(t testing.TB, target Target) *Redis {
	t.Helper()
	pkg.mu.Lock()
	if !slices.Contains(pkg.targets, target) {
		target = pkg.targets[0]
	}
	pkg.mu.Unlock()
	return On(t, target)
}

// On returns a client on target, as New does.
func On(t testing.TB, target Target) *Redis {
	t.Helper()
	if target == Cluster {
		return open(t, target, "", clusterAddrs(t))
	}
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = DefaultURL
	}
	return open(t, target, url, nil)
}

// Private returns a Redis of the test's own on the current pass's target (a redis-server, or a six-node cluster
// of its own), which the test may flush or kill; it is stopped at the end of the test.
func Private(t testing.TB) *Redis {
	t.Helper()
	if Pass() == Cluster {
		return open(t, Cluster, "", storetest.StartCluster(t, 3, 1).Addrs)
	}
	return open(t, Single, storetest.StartRedis(t, "--notify-keyspace-events", "Ex").URL, nil)
}

// Flush deletes every key on every master, as a Redis restarted without persistence would have lost them. Only
// for a Private Redis: others are shared with tests running at the same time.
func (r *Redis) Flush(ctx context.Context) error {
	if c, ok := r.Client.(*goredis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return c.FlushDB(ctx).Err() })
	}
	return r.Client.FlushDB(ctx).Err()
}

func open(t testing.TB, target Target, url string, addrs []string) *Redis {
	t.Helper()
	r := &Redis{Prefix: prefix(), Target: target, URL: url, Addrs: addrs}
	if target == Cluster {
		r.Client = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: r.Addrs, PoolSize: 64,
			ClusterStateReloadInterval: 2 * time.Second})
	} else {
		opt, err := goredis.ParseURL(r.URL)
		if err != nil {
			t.Fatalf("redistest: REDIS_URL: %v", err)
		}
		opt.PoolSize = 64
		r.Client = goredis.NewClient(opt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Client.Ping(ctx).Err(); err != nil {
		_ = r.Client.Close()
		t.Fatalf("redistest: %s Redis: %v", target, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.cleanUp(ctx); err != nil {
			t.Logf("redistest: deleting the keys under %s: %v", r.Prefix, err)
		}
		_ = r.Client.Close()
	})
	return r
}

// Each runs fn as a subtest on each target ("single", "cluster"), for an end-to-end test that must hold on both
// while the rest of its package runs on single Redis. In a RunEach package it runs on the current pass's target
// only, which the package runs anyway.
func Each(t *testing.T, fn func(t *testing.T, r *Redis)) {
	t.Helper()
	pkg.mu.Lock()
	targets := pkg.targets
	if pkg.each {
		targets = []Target{pkg.pass}
	}
	pkg.mu.Unlock()
	for _, target := range targets {
		t.Run(string(target), func(t *testing.T) { fn(t, On(t, target)) })
	}
}

// DeleteMatching deletes every key matching the glob pattern, on every master of a cluster, key by key (keys of
// different slots cannot go in one DEL).
func DeleteMatching(ctx context.Context, rdb goredis.UniversalClient, pattern string) error {
	each := func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return err
		}
		_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		})
		return err
	}
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, each)
	case *goredis.Client:
		return each(ctx, c)
	default:
		return fmt.Errorf("redistest: cannot scan a %T", rdb)
	}
}

// DeleteShow deletes every key of a show (all carry its hash tag) on any target.
func DeleteShow(ctx context.Context, rdb goredis.UniversalClient, show string) error {
	if err := DeleteMatching(ctx, rdb, Glob(rediskey.Tag(show))+"*"); err != nil {
		return err
	}
	// A partitioned queue's other lines (rediskey.Line).
	line := strings.TrimSuffix(rediskey.Tag(show), "}") + rediskey.LineSep
	return DeleteMatching(ctx, rdb, Glob(line)+"*")
}

// Glob escapes s for a SCAN MATCH pattern.
func Glob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

// cleanUp deletes the test's keys.
func (r *Redis) cleanUp(ctx context.Context) error {
	return DeleteMatching(ctx, r.Client, "*"+Glob(r.Prefix)+"*")
}

// prefix is a fresh test prefix: short (it ends up in many keys) and unique across concurrent test binaries.
func prefix() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "rt" + hex.EncodeToString(b[:]) + "-"
}

// targets reads REDIS_TEST_TARGETS.
func targets() ([]Target, error) {
	v := os.Getenv("REDIS_TEST_TARGETS")
	if v == "" {
		return []Target{Single, Cluster}, nil
	}
	var out []Target
	for _, s := range strings.Split(v, ",") {
		switch t := Target(strings.TrimSpace(s)); t {
		case Single, Cluster:
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		default:
			return nil, fmt.Errorf("REDIS_TEST_TARGETS: %q is neither %q nor %q", s, Single, Cluster)
		}
	}
	return out, nil
}
