package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/store"
)

func databaseURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func redisAddr() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		if o, err := goredis.ParseURL(u); err == nil {
			return o.Addr
		}
	}
	return "127.0.0.1:6379"
}

func TestUnavailableFromRealStores(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	deadPool := storetest.DeadPool(t, cfg)
	livePool, err := pgxpool.New(ctx, databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer livePool.Close()
	closedPool, err := pgxpool.New(ctx, databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	closedPool.Close()

	deadRedis := storetest.DeadRedis(t)
	// An address that answers in another protocol: a REDIS_URL naming the wrong service, a TLS port spoken to in
	// plain text. The store cannot serve, as when it is down.
	notRedis := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer notRedis.Close()
	httpRedis := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(notRedis.URL, "http://"), MaxRetries: -1})
	defer httpRedis.Close()
	liveRedis := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer liveRedis.Close()
	closedRedis := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	closedRedis.Close()
	key := fmt.Sprintf("storetest:%d", time.Now().UnixNano())
	defer liveRedis.Del(ctx, key)
	if err := liveRedis.Set(ctx, key, "a string", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		call func() error
		want bool
	}{
		{"postgres on a closed port", func() error { _, err := deadPool.Exec(ctx, "SELECT 1"); return err }, true},
		{"postgres pool closed", func() error { _, err := closedPool.Exec(ctx, "SELECT 1"); return err }, true},
		{"postgres backend terminated", func() error {
			conn, err := pgx.Connect(ctx, databaseURL())
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
			if err == nil {
				_, err = conn.Exec(ctx, "SELECT 1")
			}
			return err
		}, true},
		{"postgres acquire times out", func() error {
			c, cancel := context.WithTimeout(ctx, time.Nanosecond)
			defer cancel()
			<-c.Done()
			_, err := deadPool.Exec(c, "SELECT 1")
			return err
		}, true},
		{"postgres syntax error", func() error { _, err := livePool.Exec(ctx, "SELEC 1"); return err }, false},
		{"postgres division by zero", func() error { _, err := livePool.Exec(ctx, "SELECT 1/0"); return err }, false},
		{"postgres no rows", func() error { return livePool.QueryRow(ctx, "SELECT 1 WHERE false").Scan(new(int)) }, false},
		{"redis on a closed port", func() error { return deadRedis.Ping(ctx).Err() }, true},
		{"redis client closed", func() error { return closedRedis.Ping(ctx).Err() }, true},
		{"redis address speaking HTTP", func() error { return httpRedis.HGet(ctx, key, "f").Err() }, true},
		{"redis wrong type", func() error { return liveRedis.LPush(ctx, key, "x").Err() }, false},
		{"redis nil", func() error { return liveRedis.Get(ctx, key+":missing").Err() }, false},
		// A cluster client follows MOVED and ASK itself; one that reaches the caller means the slot kept moving
		// (a failover under way). A real server's reply, as a script can send it.
		{"redis slot still moving", func() error {
			return liveRedis.Eval(ctx, "return redis.error_reply('MOVED 14114 127.0.0.1:1')", nil).Err()
		}, true},
		{"redis slot being migrated", func() error {
			return liveRedis.Eval(ctx, "return redis.error_reply('ASK 14114 127.0.0.1:1')", nil).Err()
		}, true},
		{"request cancelled", func() error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			return liveRedis.Ping(c).Err()
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("got no error")
			}
			if got := driver.Unavailable(fmt.Errorf("adapter: %w", err)); got != tt.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", err, got, tt.want)
			}
			got := driver.Classify(err)
			if errors.Is(got, store.ErrUnavailable) != tt.want {
				t.Fatalf("Classify(%v) = %v, want ErrUnavailable in the chain: %v", err, got, tt.want)
			}
			if !errors.Is(got, err) {
				t.Fatalf("Classify lost the original error: %v", got)
			}
		})
	}
	if driver.Classify(nil) != nil {
		t.Fatal("Classify(nil) is not nil")
	}
}

// A cluster client re-reads the slot map every few seconds, so a failed master's slots reach its replica
// without waiting for go-redis's default minute.
func TestOpenRedisCluster(t *testing.T) {
	t.Parallel()
	rdb, err := driver.OpenRedis("", []string{"127.0.0.1:7000"}, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c, ok := rdb.(*goredis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want a cluster client", rdb)
	}
	if got := c.Options().ClusterStateReloadInterval; got <= 0 || got > 5*time.Second {
		t.Fatalf("cluster state reload interval %s, want a few seconds", got)
	}
	if _, err := driver.OpenRedis("not a url", nil, 0); err == nil {
		t.Fatal("a bad REDIS_URL was accepted")
	}
}
