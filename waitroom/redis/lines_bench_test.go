package redis_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/waitroom"
)

// ceilingRun is one of the shows BenchmarkJoinCeilingPartitions compares: its partition count, how many joiners
// join it at once, and the joins a second each master of its lines is sent (0: as fast as the joiners go).
type ceilingRun struct {
	k, joiners int
	perMaster  float64
}

// ceilingRuns: the single queue, 3 and 12 partitions from 64 joiners as fast as they go (the first is the
// baseline), then the same at 1,500 joins a second to each master of the show's lines (the single queue's is
// their baseline). A master's CPU a join falls as its load rises (more joins ride each read and each write), and
// two vCPUs' joiners cannot load three masters as they load one: at an equal rate a master, every master works
// as the single queue's does, as they all would at their ceiling, saturated.
var ceilingRuns = []ceilingRun{{1, 64, 0}, {3, 64, 0}, {12, 64, 0}, {1, 64, 1500}, {3, 64, 1500}, {12, 64, 1500}}

// ceilingMasters is the package cluster's masters.
const ceilingMasters = 3

const (
	ceilingRounds = 5     // rounds per show, alternated
	ceilingPer    = 12000 // joins per round
)

// BenchmarkJoinCeilingPartitions measures what splitting one show's queue over partitions buys its joins on a
// three-master Redis Cluster (the package's, started from the machine's redis-server whatever the pass): for each
// of 1, 3 and 12 partitions, a show of its own (open, admitting nobody) takes fresh fans through
// waitroom.Service.Join from 64 joiners, as fast as they go and again paced at 1,500 joins a second to each master
// of the show's lines (ceilingRuns), in rounds that alternate the shows so that the machine's drifting load falls
// on each. Each master's own CPU (INFO cpu) is read before and after every round, so the figures do not
// depend on how fast this shared machine lets the joiners run: for each count, the busiest master's share of the
// masters' CPU spent on the joins, its CPU per join, and the show's Redis-bound join ceiling (one over that CPU)
// as a ratio to the single queue's in the same run. Beside them, the commands a join runs (INFO commandstats:
// join.lua and the calls inside it) and the joins a request read carries on the busiest master (INFO stats'
// total_reads_processed): the autopipeliner sends each master the joins queued for it, so spread over three a
// batch holds a third as many, and each join bears more of a read's and a write's cost. Run with -benchtime 1x;
// it takes a minute or two.
func BenchmarkJoinCeilingPartitions(b *testing.B) {
	r := redistest.On(b, redistest.Cluster)
	cc, ok := r.Client.(*goredis.ClusterClient)
	if !ok {
		b.Fatalf("the cluster target gave a %T", r.Client)
	}
	ctx := context.Background()
	svc := newService(b, cc, issuer(b), waitroom.Options{})
	shows := make([]string, len(ceilingRuns))
	var fan atomic.Int64
	// round joins n new fans into show from the joiners, and returns what each master spent on it and how long
	// it took.
	round := func(show string, c ceilingRun, n int64) (map[string]masterUse, time.Duration) {
		var done atomic.Int64
		var g errgroup.Group
		pace := rate.NewLimiter(rate.Inf, 1)
		if c.perMaster > 0 {
			pace = rate.NewLimiter(rate.Limit(c.perMaster*float64(min(c.k, ceilingMasters))), 8)
		}
		use0, start := masterUses(b, cc), time.Now()
		for range c.joiners {
			g.Go(func() error {
				for done.Add(1) <= n {
					if err := pace.Wait(ctx); err != nil {
						return err
					}
					u := "c" + strconv.FormatInt(fan.Add(1), 36)
					if _, err := svc.Join(ctx, show, u); err != nil {
						return fmt.Errorf("join %s to %s: %w", u, show, err)
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		took, use := time.Since(start), masterUses(b, cc)
		for addr, u := range use0 {
			use[addr] = use[addr].minus(u)
		}
		return use, took
	}
	for i, c := range ceilingRuns {
		// Under the test's prefix: its cleanup deletes the keys of every line on every master.
		shows[i] = r.ID("ceiling" + strconv.Itoa(i))
		configureLines(b, cc, shows[i], c.k, 100, 1000)
		openSale(b, cc, shows[i])
		if _, err := svc.Tick(ctx, shows[i], false); err != nil { // every line restored and given its settings
			b.Fatal(err)
		}
		round(shows[i], c, 500) // warm: connections to every master dialled, join.lua loaded on each
	}

	use := make([]map[string]masterUse, len(ceilingRuns))
	took := make([]time.Duration, len(ceilingRuns))
	for i := range use {
		use[i] = map[string]masterUse{}
	}
	b.ResetTimer()
	for rd := range ceilingRounds * b.N {
		for j := range ceilingRuns {
			i := (j + rd) % len(ceilingRuns) // each show goes first, middle and last in turn
			u, d := round(shows[i], ceilingRuns[i], ceilingPer)
			for addr, v := range u {
				use[i][addr] = use[i][addr].plus(v)
			}
			took[i] += d
		}
	}
	b.StopTimer()
	n := float64(ceilingPer * ceilingRounds * b.N)
	var base float64 // the single queue's busiest master's CPU per join in the same group of runs, µs
	for i, c := range ceilingRuns {
		var total, busiest masterUse
		for _, v := range use[i] {
			total = total.plus(v)
			if v.cpu > busiest.cpu {
				busiest = v
			}
		}
		per := float64(busiest.cpu.Nanoseconds()) / n / 1e3
		if c.k == 1 {
			base = per
		}
		joins := n * float64(busiest.cpu) / float64(total.cpu) // the busiest master's share of the joins, near enough
		name := "k" + strconv.Itoa(c.k)
		if c.perMaster > 0 {
			name += "-paced"
		}
		b.ReportMetric(float64(busiest.cpu)/float64(total.cpu), name+"-busiest-share")
		b.ReportMetric(per, name+"-busiest-µs/join")
		b.ReportMetric(base/per, name+"-ceiling-x-k1")
		b.ReportMetric(float64(total.cpu.Nanoseconds())/n/1e3, name+"-redis-µs/join")
		b.ReportMetric(float64(total.calls)/n, name+"-cmds/join")
		b.ReportMetric(joins/float64(max(busiest.reads, 1)), name+"-busiest-joins/read")
		b.ReportMetric(n/took[i].Seconds(), name+"-joins/s")
		b.Logf("%d partitions, %d joiners, %v joins/s a master (0: unpaced), %.0f joins: each master's %v", c.k,
			c.joiners, c.perMaster, n, use[i])
	}
}

// masterUse is what a master spent: CPU (user and system), commands run, and requests read (each read may carry
// a batch of them).
type masterUse struct {
	cpu          time.Duration
	calls, reads int64
}

func (u masterUse) plus(v masterUse) masterUse {
	return masterUse{u.cpu + v.cpu, u.calls + v.calls, u.reads + v.reads}
}

func (u masterUse) minus(v masterUse) masterUse {
	return masterUse{u.cpu - v.cpu, u.calls - v.calls, u.reads - v.reads}
}

func (u masterUse) String() string {
	return fmt.Sprintf("{cpu %v, %d commands, %d reads}", u.cpu, u.calls, u.reads)
}

var (
	cmdstatRe = regexp.MustCompile(`(?m)^cmdstat_[^:]+:calls=(\d+),`)
	readsRe   = regexp.MustCompile(`(?m)^total_reads_processed:(\d+)`)
)

// masterUses is what each master has spent so far, by address.
func masterUses(b *testing.B, cc *goredis.ClusterClient) map[string]masterUse {
	b.Helper()
	var mu sync.Mutex
	out := map[string]masterUse{}
	if err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *goredis.Client) error {
		var u masterUse
		var err error
		if u.cpu, err = usedCPU(ctx, c); err != nil {
			return err
		}
		info, err := c.Info(ctx, "commandstats", "stats").Result()
		if err != nil {
			return err
		}
		for _, m := range cmdstatRe.FindAllStringSubmatch(info, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			u.calls += n
		}
		if m := readsRe.FindStringSubmatch(info); m != nil {
			u.reads, _ = strconv.ParseInt(m[1], 10, 64)
		}
		mu.Lock()
		out[c.Options().Addr] = u
		mu.Unlock()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return out
}
