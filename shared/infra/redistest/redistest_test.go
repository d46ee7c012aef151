package redistest_test

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunEach(m)) }

// A test's keys, across many shows and so many cluster slots, are gone when it ends; another test's are not.
func TestCleanUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other := redistest.New(t)
	keep := rediskey.Seat(other.ID("show"), "A1")
	if err := other.Client.Set(ctx, keep, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	t.Run("writer", func(t *testing.T) {
		r := redistest.New(t)
		if r.Prefix == other.Prefix {
			t.Fatalf("two tests share the prefix %s", r.Prefix)
		}
		for i := range 20 {
			show := r.ID("s" + string(rune('a'+i)))
			keys = append(keys, rediskey.Seat(show, "A1"), rediskey.ShowInfo(show))
			// A script over two keys of one show must work on a cluster too: the prefix sits inside the tag.
			if err := r.Client.Eval(ctx, `redis.call('SET', KEYS[1], 'x'); return redis.call('HSET', KEYS[2], 'f', 'v')`,
				[]string{rediskey.Seat(show, "A1"), rediskey.ShowInfo(show)}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		env := r.Env()
		if (r.Target == redistest.Cluster) != (env["REDIS_CLUSTER_ADDRS"] != "") || len(env) != 1 {
			t.Errorf("Env on %s: %v", r.Target, env)
		}
		if r.Target == redistest.Cluster {
			if _, ok := r.Client.(*goredis.ClusterClient); !ok {
				t.Errorf("the cluster target gave a %T", r.Client)
			}
		}
	})
	for _, k := range keys {
		if n := other.Client.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s is still there after its test ended", k)
		}
	}
	if n := other.Client.Exists(ctx, keep).Val(); n != 1 {
		t.Errorf("another test's key %s was deleted", keep)
	}
}

// Each runs a subtest per target of the package's pass.
func TestEach(t *testing.T) {
	t.Parallel()
	var ran []redistest.Target
	redistest.Each(t, func(t *testing.T, r *redistest.Redis) {
		ran = append(ran, r.Target)
		if err := r.Client.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	})
	if len(ran) != 1 {
		t.Errorf("in a RunEach package Each ran on %v, want the pass's target only", ran)
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	if got, want := redistest.Glob(`{show:a*b?[c]\}`), `{show:a\*b\?\[c\]\\}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
