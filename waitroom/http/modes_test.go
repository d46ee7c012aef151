package http_test

import (
	"encoding/json"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

// TestModesThroughTheAPI: the contract's mode fields on PUT and GET, enabled answered as mode != "off", a fan
// admitted at once under threshold mode, and bad modes and limits refused with a problem.
func TestModesThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	path := "/admin/v1/shows/" + show + "/queue"
	put := func(body string, want int) map[string]any {
		t.Helper()
		res, b := s.do(t, "PUT", path, "Bearer "+adminToken, body)
		if res.StatusCode != want {
			t.Fatalf("PUT %s: got %d %s, want %d", body, res.StatusCode, b, want)
		}
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		if want >= 400 && res.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("PUT %s: %d answered %q, want a problem", body, want, res.Header.Get("Content-Type"))
		}
		return out
	}
	if got := put(`{"enabled":true}`, 200); got["mode"] != "always" || got["enabled"] != true {
		t.Fatalf("enabled true alone: %v", got)
	}
	got := put(`{"mode":"threshold","activeUsersThreshold":2,"newUsersPerMinuteThreshold":100,"cooldownSeconds":30,
		"autotune":{"enabled":true,"minAdmitPerSecond":2,"maxAdmitPerSecond":50,"targetHoldP99Ms":300}}`, 200)
	at, _ := got["autotune"].(map[string]any)
	if got["mode"] != "threshold" || got["enabled"] != true || got["activeUsersThreshold"] != 2.0 ||
		got["newUsersPerMinuteThreshold"] != 100.0 || got["cooldownSeconds"] != 30.0 || at["enabled"] != true ||
		at["maxAdmitPerSecond"] != 50.0 || at["targetHoldP99Ms"] != 300.0 {
		t.Fatalf("threshold settings: %v", got)
	}
	// Partial autotune: the members left out stay.
	if at, _ := put(`{"autotune":{"targetHoldP99Ms":400}}`, 200)["autotune"].(map[string]any); at["enabled"] != true ||
		at["maxAdmitPerSecond"] != 50.0 || at["targetHoldP99Ms"] != 400.0 {
		t.Fatalf("partial autotune: %v", at)
	}
	if st, _ := s.join(t, show, "f1"); st.Status != "admitted" {
		t.Fatalf("first fan under the threshold: %+v, want admitted at once", st)
	}
	s.join(t, show, "f2")
	if st, _ := s.join(t, show, "f3"); st.Status != "waiting" {
		t.Fatalf("third fan, threshold 2: %+v, want waiting", st)
	}
	res, b := s.do(t, "GET", path, "Bearer "+adminToken, "")
	var figures map[string]any
	if res.StatusCode != 200 || json.Unmarshal(b, &figures) != nil {
		t.Fatalf("GET: %d %s", res.StatusCode, b)
	}
	if figures["engaged"] != true || figures["activeUsers"] != 2.0 || figures["arrivalsPerMinute"] != 3.0 ||
		figures["admitPerSecondNow"] != 5.0 || figures["autotuneReason"] == nil {
		t.Fatalf("GET figures: %s", b)
	}
	for name, body := range map[string]string{
		"unknown mode":                `{"mode":"sometimes"}`,
		"enabled contradicts mode":    `{"mode":"threshold","enabled":false}`,
		"zero active threshold":       `{"activeUsersThreshold":0}`,
		"negative cooldown":           `{"cooldownSeconds":-1}`,
		"autotune bounds upside down": `{"autotune":{"minAdmitPerSecond":60,"maxAdmitPerSecond":50}}`,
	} {
		t.Run(name, func(t *testing.T) { put(body, 422) })
	}
	if got := put(`{"mode":"off"}`, 200); got["enabled"] != false {
		t.Fatalf("mode off: %v", got)
	}
}
