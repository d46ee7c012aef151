package postgres_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
)

func drawWith(count int) waitroom.WaveDraw {
	return func(seed string, el []waitroom.Eligible) ([]int, error) { return waitroom.DrawWave(seed, el, count) }
}

func seed(t testing.TB) string {
	s, err := waitroom.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWavesRaceRegistrations: fans register while waves are drawn; no fan is invited twice, every wave's
// eligible list holds exactly the fans not invited before it, and each status follows the waves.
func TestWavesRaceRegistrations(t *testing.T) {
	t.Parallel()
	r := wrpostgres.New(pgtest.New(t))
	ctx := context.Background()
	if _, _, err := r.DrawWave(ctx, "s1", waitroom.WaveRequest{Count: 1}, seed(t), drawWith(1)); err != waitroom.ErrNoRegistrations {
		t.Fatalf("a wave before any registration: %v", err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				u := "u" + strconv.Itoa(g*100+i)
				if _, _, err := r.Register(ctx, "s1", u, waitroom.FanHash("s1", u), seed(t)); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	invited := map[string]int{}
	for range 5 {
		w, fans, err := r.DrawWave(ctx, "s1", waitroom.WaveRequest{Count: 15}, seed(t), drawWith(15))
		if err != nil && err != waitroom.ErrNoRegistrations {
			t.Fatal(err)
		}
		for _, f := range fans {
			if prev, dup := invited[f.User]; dup {
				t.Fatalf("%s invited by waves %d and %d", f.User, prev, w.WaveID)
			}
			invited[f.User] = w.WaveID
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d registrations failed", failed.Load())
	}
	ws, err := r.Waves(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, w := range ws {
		if w.DrawnAt == nil {
			if w.Seed != "" {
				t.Errorf("the next wave's seed is published: %+v", w)
			}
			continue
		}
		hs, err := r.WaveEligible(ctx, "s1", w.WaveID)
		if err != nil || len(hs) != w.Eligible || waitroom.HashesDigest(hs) != w.EligibleSHA256 {
			t.Fatalf("wave %d's list: %d of %d (%v)", w.WaveID, len(hs), w.Eligible, err)
		}
		total += w.Invited
	}
	if total != len(invited) {
		t.Fatalf("waves say %d invited, %d distinct", total, len(invited))
	}
	for _, u := range []string{"u0", "u105", "u724"} {
		reg, err := r.Registration(ctx, "s1", u)
		switch {
		case err != nil:
			t.Fatal(err)
		case invited[u] > 0 && (reg.Status != waitroom.StatusInvited || reg.WaveID != invited[u]):
			t.Errorf("%s: %+v, invited by wave %d", u, reg, invited[u])
		case invited[u] == 0 && reg.Status == waitroom.StatusInvited:
			t.Errorf("%s: %+v, invited by none", u, reg)
		}
	}
	n := 0
	if err := r.Registrants(ctx, "s1", func(fs []waitroom.AccessFan) error {
		for _, f := range fs {
			if f.Invited != (invited[f.User] > 0) {
				t.Errorf("the copy's %s: invited %t", f.User, f.Invited)
			}
		}
		n += len(fs)
		return nil
	}); err != nil || n != 200 {
		t.Fatalf("registrants: %d %v", n, err)
	}
}

// BenchmarkRegister: registrations recorded per second, from as many goroutines as GOMAXPROCS×4.
func BenchmarkRegister(b *testing.B) {
	r := wrpostgres.New(pgtest.New(b))
	ctx := context.Background()
	s := seed(b)
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := "u" + strconv.FormatInt(n.Add(1), 10)
			if _, _, err := r.Register(ctx, "bench", u, waitroom.FanHash("bench", u), s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
}

// BenchmarkDrawWaveRecord draws a wave of a third of WAVE_BENCH_FANS registered fans (default 300,000) in the
// record: the read of the list, the draw, the invited marked, in one transaction.
func BenchmarkDrawWaveRecord(b *testing.B) {
	fans := 300_000
	if v, err := strconv.Atoi(os.Getenv("WAVE_BENCH_FANS")); err == nil && v > 0 {
		fans = v
	}
	pool := pgtest.New(b)
	r := wrpostgres.New(pool)
	ctx := context.Background()
	for i := range b.N {
		show := "bench" + strconv.Itoa(i)
		rows := make([][]any, fans)
		for j := range rows {
			u := "fan-" + strconv.Itoa(j)
			h := waitroom.FanHash(show, u)
			rows[j] = []any{show, u, h[:]}
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"registrations"}, []string{"show_id", "user_id", "fan_hash"},
			pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		if _, _, err := r.Register(ctx, show, "fan-0", waitroom.FanHash(show, "fan-0"), seed(b)); err != nil {
			b.Fatal(err)
		}
		rows = nil
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		w, _, err := r.DrawWave(ctx, show, waitroom.WaveRequest{Count: fans / 3}, seed(b), drawWith(fans/3))
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		if err != nil || w.Invited != fans/3 {
			b.Fatalf("wave: %+v %v", w, err)
		}
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20), "MB-allocated")
	}
}
