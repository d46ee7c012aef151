// Package app wires the edge: configuration, Redis, the admission keys, the fiber server with its policies, the
// waiting room's routes and the proxy to booking. Run serves until its context is cancelled; main and end-to-end
// tests both call it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	edgehttp "github.com/flashseat/flashseat/edge/http"
)

// Run serves the edge on cfg.Addr until ctx is cancelled, then drains in-flight requests for at most
// cfg.ShutdownTimeout and closes Redis last. ready, if not nil, receives the bound address (useful with ":0").
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(addr string)) error {
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("edge: REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	srv := edgehttp.New(edgehttp.Config{
		Proxy: edgehttp.ProxyConfig{
			Target:          cfg.BookingURL,
			DialTimeout:     cfg.DialTimeout,
			HeaderTimeout:   cfg.HeaderTimeout,
			Timeout:         cfg.UpstreamTimeout,
			IdleConnTimeout: cfg.IdleConnTimeout,
			MaxIdleConns:    cfg.MaxIdleConns,
			StreamHeartbeat: cfg.StreamHeartbeat,
		},
		Trusted:     cfg.TrustedProxies,
		Registry:    reg,
		Log:         log,
		BodyLimit:   cfg.BodyLimit,
		ReadTimeout: cfg.ReadTimeout,
		IdleTimeout: cfg.IdleTimeout,
		Ready: []edgehttp.Check{
			{Name: "redis", Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		},
	})

	// Workers (the waiting room's admitter and fan-out) stop when work is cancelled, after the server drained.
	work, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	_ = work

	// The waiting room mounts its routes here, behind the edge's middleware and before the catch-all proxy.

	srv.Forward()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("edge: listen %s: %w", cfg.Addr, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("edge listening", "addr", ln.Addr().String(), "upstream", cfg.BookingURL.String())
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return fmt.Errorf("edge: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("edge shutting down", "drain", cfg.ShutdownTimeout.String())
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(drain)
	stopWork()
	if serr := <-served; serr != nil && !errors.Is(serr, net.ErrClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
