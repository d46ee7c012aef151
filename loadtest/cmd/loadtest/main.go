// Command loadtest plays a flash crowd against a running flashseat platform through its edge, checks every
// invariant from the stores afterwards, and reports: a table on stdout, report.json and report.html under -out.
// It exits 1 when any invariant is violated, 2 on any other failure.
//
//	loadtest -scenario smoke                     # 1,000 fans, 200 seats, under a minute
//	loadtest -scenario hold-storm -baseline      # holds per second vs the row-lock design
//	loadtest -scenario megashow                  # a million fans in one partitioned queue (loadtest/megashow)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/baseline"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var v *ViolationsError
	switch {
	case errors.As(err, &v):
		os.Exit(1)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
}

// ViolationsError is run's answer when the run went through and some invariant did not hold.
type ViolationsError struct{ N int }

func (e *ViolationsError) Error() string { return fmt.Sprintf("%d invariant violations", e.N) }

// Outcome is what run leaves behind for a caller that embeds it (the end-to-end test).
type Outcome struct {
	Summary    *loadtest.Summary
	Violations []loadtest.Violation
	Dir        string
	Fans       []*loadtest.Fan
}

// lastOutcome lets the in-process test read the result without parsing stdout.
var lastOutcome Outcome

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 2 && args[0] == childFlag {
		return runChild(ctx, args[1], stdout, stderr)
	}
	if len(args) == 2 && args[0] == megashowPartFlag {
		return runMegashowPart(ctx, args[1], os.Stdin, stdout)
	}
	if isMegashow(args) {
		return runMegashow(ctx, args, stdout, stderr)
	}
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		scenario    = fs.String("scenario", "smoke", "preset: "+strings.Join(loadtest.PresetNames(), ", ")+"; or megashow (its own flags: -scenario megashow -h)")
		base        = fs.String("base", env("BASE", "http://localhost:8080"), "the platform's public base URL, the edge (env BASE); with -procs, a comma-separated list of edge replicas the processes take in turn")
		procs       = fs.Int("procs", 1, "play the crowd in this many processes (this binary again), each under its own open-file limit, on its own source addresses; this one sets up, samples and reports")
		adminToken  = fs.String("admin-token", os.Getenv("ADMIN_TOKEN"), "operator token (env ADMIN_TOKEN; else read from .run/secrets.env)")
		showID      = fs.String("show", "", "play against this existing show instead of creating one")
		allowRemote = fs.Bool("allow-remote", false, "allow a target that is not a loopback address")
		outDir      = fs.String("out", "loadtest/reports", "directory for report.json and report.html")
		dbURL       = fs.String("database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable"), "Postgres the checker reads (env DATABASE_URL; empty: skip store checks)")
		redisURL    = fs.String("redis-url", env("REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis the checker reads (env REDIS_URL)")
		redisNodes  = fs.String("redis-cluster-addrs", env("REDIS_CLUSTER_ADDRS", ""), "comma-separated nodes of the Redis Cluster the checker reads instead of -redis-url (env REDIS_CLUSTER_ADDRS)")
		noCheck     = fs.Bool("no-check", false, "skip the store checks (the crowd's own checks still run)")
		reconcile   = fs.Duration("reconcile-interval", 30*time.Second, "booking's RECONCILE_INTERVAL: a HELD booking this long past expiry is stale")
		slack       = fs.Duration("fairness-slack", time.Second, "event delivery skew tolerated by the queue-order check")
		settle      = fs.Duration("settle", 3*time.Second, "wait this long after the load before checking: requests the clients gave up on may still be landing")
		payGrace    = fs.Duration("payment-grace", 2*time.Second, "the money checks leave alone payments that changed this recently")
		maxConns    = fs.Int("max-conns", 0, "idle keep-alive connections kept per host (0: fans+64)")
		sources     = fs.Int("source-ips", 1, "spread connections over 127.0.0.1..N to pass the ephemeral port limit")
		timeout     = fs.Duration("timeout", 15*time.Second, "per-request timeout")
		seed        = fs.Uint64("seed", 0, "random seed of the fans' choices (0: random)")
		verbose     = fs.Bool("v", false, "log progress to stderr")
		fansLog     = fs.Bool("fans-log", false, "also write every fan's record to fans.jsonl in the report directory")
		profileDir  = fs.String("profile", "", "write a CPU profile of the play and a heap profile at its end for every generator process into this directory (cpu-main.pprof, heap-child-1.pprof, ...)")

		fans          = fs.Int("fans", 0, "fans (queue) or clients (hold-storm)")
		seats         = fs.Int("seats", 0, "seats of the hall to create")
		admitRate     = fs.Float64("admit-rate", 0, "queue admitPerSecond")
		maxActive     = fs.Int("max-active", 0, "queue maxActive")
		tokenTTL      = fs.Duration("token-ttl", 0, "admission token TTL")
		botDifficulty = fs.Int64("bot-difficulty", 0, "queue botProtection.baseDifficulty: each fan hashes about half of it to join (protection stays on)")
		saleDelay     = fs.Duration("sale-delay", 0, "the sale opens this long after setup")
		ramp          = fs.Duration("ramp", 0, "fans arrive spread over this window")
		duration      = fs.Duration("duration", 0, "hard bound on the whole run")
		patience      = fs.Duration("patience", 0, "a fan gives up this long after arriving")
		hotShare      = fs.Float64("hot-share", 0, "share of fans aiming at the same best seats")
		hotSeats      = fs.Int("hot-seats", 0, "hold-storm: how many best seats the hot share fights over")
		groupMin      = fs.Int("group-min", 0, "smallest group of seats a fan wants")
		groupMax      = fs.Int("group-max", 0, "largest group of seats a fan wants (at most 10)")
		maxAttempts   = fs.Int("max-attempts", 0, "holds a fan tries before giving up")
		payMix        = fs.String("pay-mix", "", "weights: ok=70,declined=10,slow=5,error=5,abandon=10")
		probeShare    = fs.Float64("probe-share", 0, "share of waiting fans that try a booking route unadmitted")
		stormDuration = fs.Duration("storm-duration", 0, "hold-storm: how long the clients hammer")
		release       = fs.Bool("release", false, "hold-storm without baseline: cancel each hold at once (preset: on)")
		stormIdem     = fs.Bool("storm-idempotency", false, "hold-storm: send an Idempotency-Key with every platform hold")
		withBaseline  = fs.Bool("baseline", false, "hold-storm: storm the row-lock baseline too, in the same run (preset: on)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: loadtest [-scenario NAME] [flags]\n\nEvery scenario field takes the preset's value unless its flag is given; the defaults shown are for\nthe flags that are not scenario fields.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, ok := loadtest.Presets[*scenario]
	if !ok {
		return fmt.Errorf("unknown scenario %q (presets: %s)", *scenario, strings.Join(loadtest.PresetNames(), ", "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override(set, "fans", &sc.Fans, *fans)
	override(set, "seats", &sc.Seats, *seats)
	override(set, "max-active", &sc.MaxActive, *maxActive)
	override(set, "hot-seats", &sc.HotSeats, *hotSeats)
	override(set, "group-min", &sc.GroupMin, *groupMin)
	override(set, "group-max", &sc.GroupMax, *groupMax)
	override(set, "max-attempts", &sc.MaxHoldAttempts, *maxAttempts)
	override(set, "token-ttl", &sc.TokenTTL, *tokenTTL)
	override(set, "bot-difficulty", &sc.BotDifficulty, *botDifficulty)
	override(set, "sale-delay", &sc.SaleDelay, *saleDelay)
	override(set, "ramp", &sc.Ramp, *ramp)
	override(set, "duration", &sc.Duration, *duration)
	override(set, "patience", &sc.Patience, *patience)
	override(set, "storm-duration", &sc.StormDuration, *stormDuration)
	override(set, "admit-rate", &sc.AdmitPerSecond, *admitRate)
	override(set, "hot-share", &sc.HotShare, *hotShare)
	override(set, "probe-share", &sc.ProbeShare, *probeShare)
	override(set, "release", &sc.Release, *release)
	override(set, "storm-idempotency", &sc.StormIdempotency, *stormIdem)
	override(set, "baseline", &sc.Baseline, *withBaseline)
	if *payMix != "" {
		m, err := loadtest.ParsePayMix(*payMix)
		if err != nil {
			return err
		}
		sc.Pay = m
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	bases := strings.Split(*base, ",")
	for _, b := range bases {
		if err := checkTarget(b, *allowRemote); err != nil {
			return err
		}
	}
	if len(bases) > 1 && *procs < 2 {
		return errors.New("several -base URLs need -procs: each process plays against one of them")
	}
	if *procs < 1 || *procs > maxProcs || (*procs > 1 && sc.Mode != loadtest.ModeQueue) {
		return fmt.Errorf("-procs must lie in [1, %d], and above 1 only for a queued scenario", maxProcs)
	}
	if *adminToken == "" && *showID == "" {
		*adminToken = secretFromFile(".run/secrets.env", "ADMIN_TOKEN")
	}
	if *adminToken == "" {
		return errors.New("an admin token is needed to set up the show: -admin-token or ADMIN_TOKEN")
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if *profileDir != "" {
		stop, err := profile(*profileDir, "main")
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				log.Error("profile", "err", err)
			}
		}()
	}

	// A waiting fan holds one stream; fans past the queue share the keep-alive pool for their API calls.
	ownFans := sc.Fans
	if *procs > 1 {
		ownFans = 0 // the children play them; this process only sets up and samples
		if err := checkShareFits(sc.Fans, *procs); err != nil {
			return err
		}
	}
	c, tr, err := player(log, bases[0], ownFans, *maxConns, 0, *sources,
		client.Options{AdminToken: *adminToken, Timeout: *timeout})
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	cfg := crowd.Config{Client: c, Scenario: sc, ShowID: *showID, Seed: *seed, Log: log, Transport: tr}
	if *procs > 1 {
		cfg.Split = &crowd.Split{Parts: *procs, Play: children(childSpec{Bases: bases, Scenario: sc, Sources: *sources,
			Timeout: *timeout, MaxConns: *maxConns, Verbose: *verbose, Profile: *profileDir}, stderr, log)}
	}
	if sc.Mode == loadtest.ModeHoldStorm && sc.Baseline {
		if *dbURL == "" {
			return errors.New("the row-lock baseline needs -database-url (or -baseline=false)")
		}
		secret := os.Getenv("AUTH_SECRET")
		if secret == "" {
			secret = secretFromFile(".run/secrets.env", "AUTH_SECRET")
		}
		b, err := baseline.Start(ctx, baseline.Config{DatabaseURL: *dbURL, AuthSecret: secret})
		if err != nil {
			return err
		}
		defer b.Close()
		cfg.Baseline = b
	}

	log.Info("playing", "scenario", sc.Name, "target", *base, "fans", sc.Fans, "botDifficulty", sc.BotDifficulty)
	r, err := crowd.Play(ctx, cfg)
	if r == nil {
		return err
	}
	if err != nil {
		log.Error("run incomplete", "err", err)
	}
	sum := loadtest.Summarize(r, *slack)
	doc := report.Document{Summary: sum, Violations: loadtest.CrowdViolations(sum), Machine: report.ThisMachine(),
		Command: report.CommandLine(append([]string{"loadtest"}, args...))}
	if *fansLog {
		doc.Fans = r.Fans
	}
	if sc.Mode == loadtest.ModeQueue {
		doc.Checked = append(doc.Checked, loadtest.InvQueueOrder, loadtest.InvTokenAccepted, loadtest.InvUnadmittedRefused)
	}

	if !*noCheck && *dbURL != "" {
		shows := []string{r.ShowID} // the baseline's show lives in its own tables, outside the invariants
		// The checker gets its own time: the run's deadline may be spent, and a verdict matters most then.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute+*settle)
		select {
		case <-time.After(*settle):
		case <-cctx.Done():
		}
		var nodes []string
		if *redisNodes != "" {
			nodes = strings.Split(*redisNodes, ",")
		}
		res, cerr := check.Run(cctx, check.Config{DatabaseURL: *dbURL, RedisURL: *redisURL, RedisClusterAddrs: nodes,
			ShowIDs: shows, ReconcileInterval: *reconcile, PaymentGrace: *payGrace})
		cancel()
		if cerr != nil {
			return fmt.Errorf("checker: %w", cerr)
		}
		doc.Violations = append(doc.Violations, res.Violations...)
		doc.Checked = append(doc.Checked, res.Checked...)
	} else {
		log.Warn("store checks skipped: no -database-url / DATABASE_URL")
	}

	if err := report.Text(stdout, doc); err != nil {
		return err
	}
	dir, werr := report.Write(*outDir, doc)
	if werr != nil {
		return werr
	}
	fmt.Fprintf(stdout, "report: %s/report.html\n", dir)
	lastOutcome = Outcome{Summary: sum, Violations: doc.Violations, Dir: dir, Fans: r.Fans}
	if err != nil {
		return err
	}
	if len(doc.Violations) > 0 {
		return &ViolationsError{N: len(doc.Violations)}
	}
	return nil
}

// override sets a scenario field from its flag, only when the flag was given: a preset's value is not a default
// a flag should silently replace.
func override[T any](set map[string]bool, name string, dst *T, v T) {
	if set[name] {
		*dst = v
	}
}

// checkTarget refuses a non-loopback target unless allowed: a load test pointed at someone else's server by a
// typo is an attack.
func checkTarget(base string, allowRemote bool) error {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("bad base URL %q", base)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		addrs, err := net.LookupIP(host)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", host, err)
		}
		ips = addrs
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("target %s is not a loopback address; pass -allow-remote to load a remote platform", host)
		}
	}
	return nil
}

// secretFromFile reads NAME=value from the env file `make run` writes, so `make loadtest` works beside it with no
// variables set.
func secretFromFile(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
