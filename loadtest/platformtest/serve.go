package platformtest

import (
	"context"
	"errors"
	"net"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// RunFunc is a service's Run as the apps export it, with its configuration bound: it serves until ctx ends and
// calls ready with the address it bound.
type RunFunc func(ctx context.Context, ready func(addr string)) error

// Service is one app's Run in the background of a test, on a loopback port.
type Service struct {
	URL string // the base URL a client dials, http://127.0.0.1:port

	tb     testing.TB
	name   string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Launch starts run in the background and returns once it reports its address; it fails the test when run
// returns first or does not come up within a minute. The service stops at the end of the test, or earlier by
// Stop: a test that restarts a service launches it again. Cleanups run last in, first out, so services launched
// in order of dependency stop in the reverse order, as in a real shutdown.
func Launch(tb testing.TB, name string, run RunFunc) *Service {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{tb: tb, name: name, cancel: cancel, done: make(chan error, 1)}
	addr := make(chan string, 1)
	// Every goroutine the service starts inherits the label, so a CPU profile of a test (the platform runs in
	// its process) splits by service: go tool pprof -tagfocus service=edge.
	go pprof.Do(ctx, pprof.Labels("service", name), func(ctx context.Context) {
		s.done <- run(ctx, func(a string) { addr <- a })
	})
	select {
	case a := <-addr:
		tb.Cleanup(s.Stop)
		s.URL = "http://" + loopback(a)
		return s
	case err := <-s.done:
		cancel()
		tb.Fatalf("%s did not start: %v", name, err)
	case <-time.After(60 * time.Second):
		cancel()
		tb.Fatalf("%s did not start within 60s", name)
	}
	return nil
}

// Serve is Launch for a service that runs until the test ends; it returns the service's base URL.
func Serve(tb testing.TB, name string, run RunFunc) string {
	tb.Helper()
	return Launch(tb, name, run).URL
}

// Stop cancels the service's context, as a deploy's SIGTERM does, and waits for Run to return. The test fails
// when Run returns an error (its graceful shutdown failed) or takes over 30s. Stopping again does nothing.
func (s *Service) Stop() {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				s.tb.Errorf("%s stopped with %v", s.name, err)
			}
		case <-time.After(30 * time.Second):
			s.tb.Errorf("%s did not stop within 30s", s.name)
		}
	})
}

// loopback turns a bound address such as [::]:port into one a client can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		return "127.0.0.1:" + port
	}
	return addr
}
