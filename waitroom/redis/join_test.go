package redis_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// TestConcurrentJoinsOneTicketEach joins many fans at once, each twice from two goroutines (two tabs), so the
// store sends their scripts together in pipelines: every fan gets exactly one ticket, both of its joins answer
// that ticket, and the tickets are 1..n with none handed out twice.
func TestConcurrentJoinsOneTicketEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 10, 100, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})

	const fans = 300
	seqs := make([][2]int64, fans)
	var wg sync.WaitGroup
	errs := make(chan error, 2*fans)
	for i := range fans {
		for tab := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := svc.Join(ctx, show, "c"+strconv.Itoa(i))
				if err != nil {
					errs <- err
					return
				}
				seqs[i][tab] = p.Seq
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for i, s := range seqs {
		if s[0] != s[1] {
			t.Fatalf("fan %d: its two joins got tickets %d and %d, want one", i, s[0], s[1])
		}
		if s[0] < 1 || s[0] > fans {
			t.Fatalf("fan %d: ticket %d, want 1..%d", i, s[0], fans)
		}
		if j, ok := seen[s[0]]; ok {
			t.Fatalf("ticket %d handed to fans %d and %d", s[0], j, i)
		}
		seen[s[0]] = i
	}
	if n, err := rdb.ZCard(ctx, wrredis.Wait(show)).Result(); err != nil || n != fans {
		t.Fatalf("queue holds %d, %v; want %d", n, err, fans)
	}
}
