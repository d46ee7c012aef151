package app

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/pow"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
	"github.com/flashseat/flashseat/waitroom"
	wrhttp "github.com/flashseat/flashseat/waitroom/http"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
	"github.com/flashseat/flashseat/waitroom/siteverify"
)

// WaitroomConfig is the waiting room's part of the edge's environment.
type WaitroomConfig struct {
	AdminToken     string        // ADMIN_TOKEN: operators' bearer token for /admin/v1/shows/{id}/queue
	Tick           time.Duration // QUEUE_TICK, default 200ms: admission tick per show on each replica
	Grace          time.Duration // QUEUE_HEARTBEAT_GRACE, default 30s: a fan silent this long is skipped
	HeartbeatEvery time.Duration // QUEUE_HEARTBEAT_FLUSH, default 2s: batched heartbeat writes
	// HeartbeatRefresh (QUEUE_HEARTBEAT_REFRESH, default a quarter of the grace) is how often each streaming
	// fan's heartbeat is rewritten: the per-fan Redis cost of a waiting crowd.
	HeartbeatRefresh time.Duration
	SecureCookies    bool // COOKIE_SECURE=true behind TLS (strconv.ParseBool's words, as booking reads it)
	// Mode (QUEUE_MODE, default off) is the site-wide queue mode of shows whose operator set none: "threshold"
	// protects every show that turns hot without warning. Edge and booking must be given the same.
	Mode string
	// AutotuneEvery (AUTOTUNE_EVERY, default 3s) is how often autotune reconsiders each show's rate.
	AutotuneEvery time.Duration
	// PulseNamespace (PULSE_NAMESPACE) is where booking's pulse reports are read; booking must publish there.
	PulseNamespace string
	// Guests limits minting guest identities per address prefix: GUEST_FREE (default 10) mint with no proof,
	// past GUEST_LIMIT (default 300) the prefix is refused; both are counts decaying with a 10-minute half-life.
	Guests waitroom.GuestPolicy
	// JoinReplicas (QUEUE_JOIN_REPLICAS, default 0: off) is how many replicas must hold a join's write before the
	// fan is told its place, confirmed by Redis's WAIT within JoinReplicaTimeout (QUEUE_JOIN_REPLICA_TIMEOUT,
	// default 200ms; a join not confirmed in time answers 503, and the fan's retry finds the same place): so a
	// master's failover never forgets a place a fan was told (waitroom/redis/replicas.go). Set it to the replicas
	// each master has (1 in the six-node cluster): WAIT for fewer lets Redis Cluster promote one that lacks it.
	JoinReplicas       int
	JoinReplicaTimeout time.Duration
}

// maxJoinReplicaTimeout keeps the WAIT at the end of a batch of joins inside the Redis client's 3 s read timeout,
// which covers the whole pipeline.
const maxJoinReplicaTimeout = 2 * time.Second

// waitroom reads the waiting room's variables into cfg.Waitroom, reporting problems like every other variable.
func (l *loader) waitroom(cfg *Config) {
	wc := WaitroomConfig{
		AdminToken:         l.String("ADMIN_TOKEN", ""),
		Tick:               l.Duration("QUEUE_TICK", 200*time.Millisecond),
		Grace:              l.Duration("QUEUE_HEARTBEAT_GRACE", 30*time.Second),
		HeartbeatEvery:     l.Duration("QUEUE_HEARTBEAT_FLUSH", 2*time.Second),
		HeartbeatRefresh:   l.Duration("QUEUE_HEARTBEAT_REFRESH", 0),
		SecureCookies:      l.Bool("COOKIE_SECURE", false),
		Mode:               l.String("QUEUE_MODE", admission.ModeOff),
		AutotuneEvery:      l.Duration("AUTOTUNE_EVERY", 3*time.Second),
		PulseNamespace:     l.String("PULSE_NAMESPACE", pulseredis.DefaultNamespace),
		Guests:             waitroom.DefaultGuestPolicy(),
		JoinReplicas:       l.IntIn("QUEUE_JOIN_REPLICAS", 0, 0, 16),
		JoinReplicaTimeout: l.PositiveDuration("QUEUE_JOIN_REPLICA_TIMEOUT", 200*time.Millisecond),
	}
	if wc.JoinReplicaTimeout < time.Millisecond || wc.JoinReplicaTimeout > maxJoinReplicaTimeout {
		l.Fail("QUEUE_JOIN_REPLICA_TIMEOUT must be between 1ms and %s", maxJoinReplicaTimeout)
	}
	wc.Guests.Free = float64(l.Int("GUEST_FREE", int(wc.Guests.Free)))
	wc.Guests.Limit = float64(l.Int("GUEST_LIMIT", int(wc.Guests.Limit)))
	if wc.Guests.Free < 0 || wc.Guests.Limit < wc.Guests.Free {
		l.Fail("GUEST_FREE must not be negative, and GUEST_LIMIT not below it")
	}
	if wc.AutotuneEvery < 100*time.Millisecond {
		l.Fail("AUTOTUNE_EVERY must be at least 100ms")
	}
	if !admission.ValidMode(wc.Mode) {
		l.Fail("QUEUE_MODE must be off, always or threshold")
	}
	if wc.Tick < 10*time.Millisecond || wc.Grace < wc.HeartbeatEvery*3 {
		l.Fail("QUEUE_TICK must be at least 10ms and QUEUE_HEARTBEAT_GRACE at least 3 x QUEUE_HEARTBEAT_FLUSH")
	}
	if wc.HeartbeatRefresh < 0 || wc.HeartbeatRefresh > wc.Grace/2 {
		l.Fail("QUEUE_HEARTBEAT_REFRESH must not be negative nor over half of QUEUE_HEARTBEAT_GRACE")
	}
	cfg.Waitroom = wc
}

// mountWaitroom mounts the waiting room's routes on the edge and starts its admission loop. Streams are ended
// as soon as shutdown begins (ctx), so the drain is not held up by fans' open streams (their EventSource
// reconnects to another replica and keeps its place); the admission loop runs until e.Work ends, after the drain.
func mountWaitroom(ctx context.Context, e *Edge) error {
	wc := e.Config.Waitroom
	if wc.AdminToken == "" {
		e.Log.Warn("ADMIN_TOKEN not set: the queue's operator routes refuse every request")
	}
	opt := waitroom.Options{Tick: wc.Tick, Grace: wc.Grace, HeartbeatEvery: wc.HeartbeatEvery,
		HeartbeatRefresh: wc.HeartbeatRefresh, Logger: e.Log, Settings: e.Gate, Guests: wc.Guests}
	if secret, err := e.Issuer.Derive(powInfo); err != nil {
		e.Log.Warn("no admission signing key: the waiting room cannot ask a proof of work", "err", err)
	} else {
		opt.PoW, _ = pow.NewIssuer(secret) // a derived secret is 32 bytes
	}
	var page wrhttp.PageSources
	if hc := e.Config.HumanCheck; hc.Enabled() {
		opt.Human, opt.HumanWidget = humanCheck{hc}, hc.Widget()
		src := hc.Sources()
		page = wrhttp.PageSources{Script: src.Script, Frame: src.Frame, Style: src.Style, Connect: src.Connect}
	}
	var metrics func(waitroom.TickResult, time.Duration, error)
	if e.Registry != nil {
		metrics = waitroomMetrics(e.Registry)
		opt.OnGuard = guardMetrics(e.Registry)
	}
	relay := queueRelay(e)
	opt.Observe = observeBoth(metrics, phaseTicks(admission.NewPhaseWatch(admpostgres.NewSharded(e.DBs), relay.Nudge, e.Log)))
	store := wrredis.New(e.Redis)
	if err := store.WaitReplicas(wc.JoinReplicas, wc.JoinReplicaTimeout); err != nil {
		return err // the timeout is checked at start-up, and the edge's client is one the store can route
	}
	// The after-sale report's record of joins and refusals (written in batches; its last flush after the drain).
	journal := wrpostgres.NewJournal(e.DBs, e.Log)
	opt.Journal = journal
	svc := waitroom.New(store, wrpostgres.NewSharded(e.DBs), e.Queues, e.Issuer, opt)
	// The console's session middleware goes ahead of the operator routes below.
	mountConsole(ctx, e, svc)
	h := wrhttp.New(wrhttp.Config{Service: svc, Users: e.Users, Issuer: e.Issuer, AdminToken: wc.AdminToken,
		Log: e.Log, SecureCookies: wc.SecureCookies, Heartbeat: e.Config.StreamHeartbeat, Audit: e.Audit,
		ClientAddr: edgehttp.ClientAddr, Exempt: e.Config.RateExempt.Contains, Settings: e.Gate, PageSources: page})
	h.Mount(e.Router)
	if e.Registry != nil {
		e.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "waitroom_streams", Help: "Open waiting-room event streams on this replica.",
		}, func() float64 { return float64(svc.Hub.Conns()) }))
	}
	e.Workers.Add(5)
	go func() { defer e.Workers.Done(); journal.Run(e.Work) }()
	go func() { defer e.Workers.Done(); _ = svc.Run(e.Work) }()
	go func() { defer e.Workers.Done(); runAutotune(e.Work, e, svc, wc.AutotuneEvery) }()
	go func() { defer e.Workers.Done(); relay.Run(e.Work) }()
	go func() {
		defer e.Workers.Done()
		select {
		case <-ctx.Done():
		case <-e.Work.Done():
		}
		h.Close()
	}()
	return nil
}

// powInfo separates the proof-of-work MAC key from the admission key's other uses (token.Issuer.Derive).
const powInfo = "flashseat waitroom proof of work v1"

// humanCheck adapts siteverify's Verifier to the guard's HumanCheck: a token the fan can fix (missing, rejected)
// is a failed check; anything else (the provider down, or refusing this deployment's own keys) cannot be
// decided and answers 503.
type humanCheck struct{ v *siteverify.Verifier }

func (h humanCheck) Verify(ctx context.Context, response, remoteIP string) (bool, error) {
	switch err := h.v.Verify(ctx, response, remoteIP); {
	case err == nil:
		return true, nil
	case errors.Is(err, siteverify.ErrMissing), errors.Is(err, siteverify.ErrRejected):
		return false, nil
	default:
		return false, err
	}
}

// waitroomMetrics counts this replica's admission ticks: fans admitted, tick latency and failures.
func waitroomMetrics(reg *prometheus.Registry) func(waitroom.TickResult, time.Duration, error) {
	admitted := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "waitroom_admitted_total", Help: "Fans admitted by this replica's admission ticks."})
	ticks := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "waitroom_tick_seconds", Help: "Duration of one admission tick of one show (script, signing, fan-out).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12)})
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "waitroom_tick_errors_total", Help: "Admission ticks that failed."})
	reg.MustRegister(admitted, ticks, failures)
	return func(snap waitroom.TickResult, took time.Duration, err error) {
		ticks.Observe(took.Seconds())
		if err != nil {
			failures.Inc()
			return
		}
		admitted.Add(float64(len(snap.Grants)))
	}
}

// queueRelay is the relay of the queue outbox (queue events, written by the admission record) into the event
// stream; every replica runs one, and they share the work.
func queueRelay(e *Edge) *eventstream.Relay {
	r := eventstream.NewRelay(admpostgres.NewSharded(e.DBs).Outbox(), e.Redis, e.Config.Events,
		e.Config.EventsRelayEvery, e.Log)
	r.Keep = e.Config.EventsOutboxKeep
	if e.Registry != nil {
		relayed := prometheus.NewCounter(prometheus.CounterOpts{Name: "edge_queue_events_relayed_total",
			Help: "Queue events appended to the event stream from the queue outbox by this replica."})
		e.Registry.MustRegister(relayed)
		r.OnRelayed = func(n int) { relayed.Add(float64(n)) }
	}
	return r
}
