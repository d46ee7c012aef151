package storetest_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/store/driver"
	"github.com/flashseat/flashseat/shared/store/storetest"
)

// TestPrivateServers: the private servers start, answer, fail as unreachable while down, and come back.
func TestPrivateServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pg := storetest.StartPostgres(t)
		query := func() error {
			c, err := pgx.Connect(ctx, pg.URL)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			_, err = c.Exec(ctx, "SELECT 1")
			return err
		}
		if err := query(); err != nil {
			t.Fatal(err)
		}
		c, err := pgx.Connect(ctx, pg.URL)
		if err != nil {
			t.Fatal(err)
		}
		pg.Stop("fast")
		_, err = c.Exec(ctx, "SELECT 1")
		if err == nil || !driver.Unavailable(err) {
			t.Fatalf("a query on a connection to a stopped server: %v, want unavailable", err)
		}
		if err := query(); !driver.Unavailable(err) {
			t.Fatalf("a connection to a stopped server: %v, want unavailable", err)
		}
		pg.Start()
		if err := query(); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		r := storetest.StartRedis(t)
		rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
		defer rdb.Close()
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		r.Kill()
		if err := rdb.Get(ctx, "k").Err(); !driver.Unavailable(err) {
			t.Fatalf("killed: %v, want unavailable", err)
		}
		r.Start()
		if err := rdb.Get(ctx, "k").Err(); !errors.Is(err, goredis.Nil) {
			t.Fatalf("after restart: %v, want an empty Redis", err)
		}
	})
}

// A dead address stays dead for the whole test: connections are refused, and no listener of this process (a
// parallel test's server) can take its port meanwhile. A free address is free for the test's own server.
func TestDeadAddrStaysDead(t *testing.T) {
	dead := storetest.DeadAddr(t)
	if c, err := net.DialTimeout("tcp", dead, time.Second); err == nil {
		c.Close()
		t.Fatalf("dialled %s, want the connection refused", dead)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", dead, err)
	}
	if ln, err := net.Listen("tcp", dead); err == nil {
		ln.Close()
		t.Fatalf("a listener took the dead address %s", dead)
	}
}

// A free address is the test's own: its server may listen there, and again after a restart, while no socket on
// port 0 (a parallel test's listener, an outgoing connection) is handed its port meanwhile. With a port bound and
// released at once, 5,000 listeners on port 0 land on about 17 of 100 such addresses.
func TestFreeAddrIsTheTestsOwn(t *testing.T) {
	free := storetest.FreeAddr(t)
	for i := range 2 {
		ln, err := net.Listen("tcp", free)
		if err != nil {
			t.Fatalf("listen %d on the free address %s: %v", i+1, free, err)
		}
		if ln2, err := net.Listen("tcp", free); err == nil {
			ln2.Close()
			t.Fatalf("a second listener shared %s with the server", free)
		}
		ln.Close()
	}

	reserved := map[string]bool{}
	for range 100 {
		reserved[storetest.FreeAddr(t)] = true
	}
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for i := range 5000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if reserved[addr] {
			t.Fatalf("listener %d was handed the reserved %s", i+1, addr)
		}
		if i%5 == 0 { // and outgoing connections, whose ports come from the same range
			c, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			local := c.LocalAddr().String()
			c.Close()
			if reserved[local] {
				t.Fatalf("a connection went out from the reserved %s", local)
			}
		}
	}
}
