package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/megashow"
	"github.com/flashseat/flashseat/shared/infra/driver"
)

// The megashow scenario (-scenario megashow) is not a crowd that books: it is loadtest/megashow, a million fans in
// one show's partitioned queue, with flags of its own. Its streaming fans play in child processes
// (megashowPartFlag), each under its own open-file limit.

// megashowPartFlag, followed by a megashow.PartSpec in JSON, makes run play one part. Only a parent passes it.
const megashowPartFlag = "-megashow-part"

// isMegashow reports whether args ask for the megashow scenario.
func isMegashow(args []string) bool {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == "scenario=megashow" || (a == "scenario" && i+1 < len(args) && args[i+1] == "megashow") {
			return true
		}
	}
	return false
}

// streamsPerPart keeps a part's streams, and an edge's, well under the development machine's open-file limit of
// 20,000 (each stream is a descriptor on either side).
const streamsPerPart = 12_500

func runMegashow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest -scenario megashow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		_          = fs.String("scenario", "megashow", "megashow")
		base       = fs.String("base", env("BASE", "http://localhost:8080"), "comma-separated edge replicas (env BASE); part i streams through the i-th, in turn")
		adminToken = fs.String("admin-token", os.Getenv("ADMIN_TOKEN"), "operator token (env ADMIN_TOKEN; else .run/secrets.env)")
		authSecret = fs.String("auth-secret", os.Getenv("AUTH_SECRET"), "the platform's user-token secret the fans' tokens are minted with (env AUTH_SECRET; else .run/secrets.env)")
		dbURL      = fs.String("database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable"), "the platform's PostgreSQL (env DATABASE_URL): the Go-API joins record ticket ceilings there")
		redisURL   = fs.String("redis-url", env("REDIS_URL", "redis://127.0.0.1:6379/0"), "the platform's Redis (env REDIS_URL)")
		redisNodes = fs.String("redis-cluster-addrs", env("REDIS_CLUSTER_ADDRS", ""), "the platform's Redis Cluster instead (env REDIS_CLUSTER_ADDRS): figures summed over its masters")
		fans       = fs.Int("fans", 1_000_000, "fans in the show's queue")
		streams    = fs.Int("streams", 100_000, "of them, fans who join through the edges (proof of work) and hold a stream; the rest join through the waiting room's Go API")
		partitions = fs.Int("partitions", 3, "the queue's partitions (1-64)")
		difficulty = fs.Int64("bot-difficulty", 1_000, "the show's botProtection.baseDifficulty: each streaming fan hashes about half of it")
		admitRate  = fs.Float64("admit-rate", 2_000, "admissions per second in the admission window")
		admitFor   = fs.Duration("admit-for", 10*time.Second, "the admission window")
		quiet      = fs.Duration("quiet", time.Minute, "the quiet window (every stream open, nobody admitted) Redis's CPU is measured over")
		procs      = fs.Int("procs", 0, "child processes the streaming fans play in (0: one per 12,500 streams, and at least one per edge)")
		sources    = fs.Int("source-ips", 2, "loopback source addresses per process")
		workers    = fs.Int("join-workers", 64, "joins in flight per process (the Go-API joins: four times as many)")
		timeout    = fs.Duration("timeout", 30*time.Second, "per join request")
		edgePIDs   = fs.String("edge-pids", "", "comma-separated process ids of the edges, whose resident memory is measured (empty: this process's, which is only right in a test)")
		outDir     = fs.String("out", "loadtest/reports", "directory for the report (report.txt, report.json)")
		verbose    = fs.Bool("v", false, "log progress to stderr")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *adminToken == "" {
		*adminToken = secretFromFile(".run/secrets.env", "ADMIN_TOKEN")
	}
	if *authSecret == "" {
		*authSecret = secretFromFile(".run/secrets.env", "AUTH_SECRET")
	}
	if *adminToken == "" || *authSecret == "" {
		return errors.New("megashow needs the operator token and the user-token secret: -admin-token, -auth-secret")
	}
	bases := strings.Split(*base, ",")
	for _, b := range bases {
		if err := checkTarget(b, false); err != nil {
			return err
		}
	}
	if *procs <= 0 {
		*procs = max((*streams+streamsPerPart-1)/streamsPerPart, min(len(bases), *streams)) // every edge gets a share
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := raiseFileLimit(fileLimit()); err != nil {
		log.Warn("open-file limit", "err", err)
	}
	var nodes []string
	if *redisNodes != "" {
		nodes = strings.Split(*redisNodes, ",")
	}
	rdb, err := driver.OpenRedis(*redisURL, nodes, 4*(*workers)+16)
	if err != nil {
		return err
	}
	defer rdb.Close()
	admin, err := client.New(bases[0], client.NewTransport(16), client.Options{AdminToken: *adminToken, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	rss := func() (int64, error) { return megashow.RSS("self") }
	if *edgePIDs != "" {
		pids := strings.Split(*edgePIDs, ",")
		rss = func() (int64, error) { return megashow.RSS(pids...) }
	}
	cfg := megashow.Config{Admin: admin, Bases: bases, Fans: *fans, Streams: *streams, Partitions: *partitions,
		Difficulty: *difficulty, AdmitPerSecond: *admitRate, AdmitFor: *admitFor, Quiet: *quiet, AuthSecret: *authSecret,
		Redis: rdb, DatabaseURL: *dbURL, EdgeRSS: rss, Parts: *procs, Sources: *sources, JoinWorkers: *workers,
		Timeout: *timeout, Start: megashow.Children(exe, stderr, megashowPartFlag), Log: log}
	log.Info("megashow", "fans", *fans, "streams", *streams, "partitions", *partitions, "difficulty", *difficulty,
		"procs", *procs, "edges", len(bases))
	r, err := megashow.Run(ctx, cfg)
	if r == nil {
		return err
	}
	if err != nil {
		log.Error("run incomplete", "err", err)
	}
	if terr := r.Text(stdout); terr != nil {
		return terr
	}
	dir := filepath.Join(*outDir, time.Now().UTC().Format("20060102-150405")+"-megashow")
	if werr := writeMegashow(dir, r, args); werr != nil {
		return werr
	}
	fmt.Fprintf(stdout, "report: %s/report.txt\n", dir)
	if err != nil {
		return err
	}
	if len(r.Violations) > 0 {
		return &ViolationsError{N: len(r.Violations)}
	}
	return nil
}

func writeMegashow(dir string, r *megashow.Report, args []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.txt"))
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "command: loadtest %s\ndate: %s\n", strings.Join(args, " "), time.Now().UTC().Format(time.RFC3339))
	if err := r.Text(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644)
}

// runMegashowPart is a child's run: one part, until its stdin closes.
func runMegashowPart(ctx context.Context, specJSON string, stdin io.Reader, stdout io.Writer) error {
	var spec megashow.PartSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("megashow part spec: %w", err)
	}
	if err := raiseFileLimit(uint64(spec.Count)*11/10 + 512); err != nil {
		return err
	}
	return megashow.ServePart(ctx, spec, stdin, stdout)
}
