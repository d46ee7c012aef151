// Package ops serves a process's operations endpoints on their own address (OPS_ADDR), away from the public
// port: Prometheus metrics, net/http/pprof, and liveness and readiness for probes. Fans can neither read the
// metrics nor profile the process; a cluster scrapes and probes this address only.
package ops

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config is what the operations server serves.
type Config struct {
	Addr     string // host:port; "" serves nothing
	Gatherer prometheus.Gatherer
	// Ready reports whether the process can serve (its stores answer); nil is always ready.
	Ready func(ctx context.Context) error
	Log   *slog.Logger
	// Bound, if set, is told the address listened on (useful with ":0").
	Bound func(addr string)
}

// Handler is the operations mux: /metrics, /debug/pprof/..., /healthz, /readyz.
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if cfg.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := cfg.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"status":"unavailable"}`))
				return
			}
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	return mux
}

// Start listens on cfg.Addr and serves until ctx ends; the returned function waits for the server to stop. With
// no address it starts nothing.
func Start(ctx context.Context, cfg Config) (wait func(), err error) {
	if cfg.Addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	// Profiles may take 30 s and more (?seconds=): no write timeout; the header timeout stops slow-loris.
	srv := &http.Server{Handler: Handler(cfg), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && cfg.Log != nil {
			cfg.Log.Error("operations server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if cfg.Log != nil {
		cfg.Log.Info("operations endpoints listening", "addr", ln.Addr().String())
	}
	if cfg.Bound != nil {
		cfg.Bound(ln.Addr().String())
	}
	return func() { <-done }, nil
}
