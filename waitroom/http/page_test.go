package http_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
)

// TestPageServed: the waiting-room page is the same for every fan (cacheable), names its states, announces errors,
// and carries no token handling of its own: the fs_session and fs_adm_{show} cookies do that. The page's behaviour
// in a browser is tested through the real edge and booking in edge/e2e (queue_page_test.go), since every state
// needs booking's show details and identity.
func TestPageServed(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 1, 10)
	res, b := s.do(t, "GET", "/queue/"+show, "", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.HasPrefix(res.Header.Get("Cache-Control"), "public") {
		t.Fatalf("page: %d %v", res.StatusCode, res.Header)
	}
	page := string(b)
	for _, want := range []string{`role="alert"`, `id="waiting"`, `id="opens"`, `id="paused"`, `id="soldout"`,
		`id="closed"`, `id="off"`, "Reconnecting… your place is kept", `"X-Requested-With": "flashseat"`,
		`<a href="/bookings">My bookings</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, banned := range []string{"localStorage", "?admission=", "access_token", "Authorization"} {
		if strings.Contains(page, banned) {
			t.Errorf("page still uses %q", banned)
		}
	}
	if res, _ := s.do(t, "GET", "/queue/bad%20id", "", ""); res.StatusCode != 400 {
		t.Errorf("bad show id: %d", res.StatusCode)
	}
}
