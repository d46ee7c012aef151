package http_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	bookinghttp "github.com/flashseat/flashseat/booking/http"
)

// TestShutdownAtAnyMomentOfListen: a stop may come before Listen has started serving, or while it hands the
// address out; either way Listen returns and nothing is left accepting. fasthttp closes only the listeners its
// Serve has registered, so a Shutdown that came first used to leave the server accepting for ever.
func TestShutdownAtAnyMomentOfListen(t *testing.T) {
	t.Parallel()
	listen := func(srv *bookinghttp.Server, ready func(string)) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- srv.Listen("127.0.0.1:0", ready) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Listen returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Listen is still serving after Shutdown")
		}
	}

	t.Run("before", func(t *testing.T) {
		srv := bookinghttp.New(bookinghttp.Config{})
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var called bool
		listen(srv, func(string) { called = true })
		if called {
			t.Error("a server stopped before it listened handed out an address")
		}
	})

	t.Run("as it hands out its address", func(t *testing.T) {
		srv := bookinghttp.New(bookinghttp.Config{})
		var addr string
		listen(srv, func(a string) {
			addr = a
			if err := srv.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
		if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
			t.Error("the address still answers after Shutdown")
		}
	})
}
