package megashow_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/megashow"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// TestMegashowScaled plays the megashow scenario at a fiftieth of its size against the real platform on a
// three-master Redis Cluster of the test's own (so that Redis's memory and CPU are this run's alone): 20,000 fans,
// 2,000 of them joining through the edge with proofs of work and streaming, in a queue over three partitions.
// The report must hold every invariant (everyone joined once, positions honest, nobody admitted twice, the
// admitted first in line) and carry every figure. The edge runs in this process, so its memory per stream is this
// process's, the generator's streams included: only checked to be there.
func TestMegashowScaled(t *testing.T) {
	fans, streams := 20_000, 2_000
	if testing.Short() {
		fans, streams = 5_000, 500
	}
	cluster := storetest.StartCluster(t, 3, 0)
	p := platformtest.Start(t, platformtest.Options{RedisClusterAddrs: cluster.Addrs, NoContractCheck: true})
	admin, err := client.New(p.BaseURL, client.NewTransport(16), client.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a busy machine takes longer, not a wrong answer
	defer cancel()
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	r, err := megashow.Run(ctx, megashow.Config{
		Admin: admin, Bases: p.EdgeURLs, Fans: fans, Streams: streams, Partitions: 3, Difficulty: 100,
		AdmitPerSecond: float64(streams) / 4, AdmitFor: 2 * time.Second, Quiet: 3 * time.Second, AuthSecret: p.AuthSecret, DatabaseURL: p.DatabaseURL,
		Redis: cluster.Client(t), EdgeRSS: func() (int64, error) { return megashow.RSS("self") },
		Parts: 1, Sources: 1, JoinWorkers: 32, Timeout: 20 * time.Second,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out testWriter
	out.t = t
	_ = r.Text(&out)
	if len(r.Violations) > 0 {
		t.Fatalf("%d violations", len(r.Violations))
	}
	if r.Masters != 3 || r.AdmittedEvents < 100 || r.AdmittedEvents >= streams {
		t.Errorf("masters %d, admitted events %d: want 3 masters and some but not every streaming fan admitted",
			r.Masters, r.AdmittedEvents)
	}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
