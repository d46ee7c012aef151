package edge

import (
	"net/http"
	"testing"
)

func TestRemoveHopByHop(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Connection", "keep-alive, X-Private")
	h.Set("X-Private", "secret")
	h.Set("Keep-Alive", "timeout=5")
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Upgrade", "websocket")
	h.Set("Proxy-Authorization", "Basic x")
	h.Set("Te", "trailers")
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer t")
	RemoveHopByHop(h)
	for _, gone := range []string{"Connection", "X-Private", "Keep-Alive", "Transfer-Encoding", "Upgrade",
		"Proxy-Authorization", "Te"} {
		if v := h.Get(gone); v != "" {
			t.Errorf("%s kept: %q", gone, v)
		}
	}
	for _, kept := range []string{"Content-Type", "Authorization"} {
		if h.Get(kept) == "" {
			t.Errorf("%s dropped", kept)
		}
	}
}

func TestReplayable(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "PUT": true, "DELETE": true, "POST": false, "PATCH": false} {
		if got := Replayable(m); got != want {
			t.Errorf("Replayable(%s) = %v, want %v", m, got, want)
		}
	}
}
