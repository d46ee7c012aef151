package app

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

// TestBlockedPrefixSpellings: a prefix an operator blocks in any spelling of it (an IPv4 /32, an IPv4-mapped
// IPv6 address, an IPv6 address or a prefix longer than /64), through the queue settings or the console's block
// API, is stored in the form the guard computes for a client and refuses a client from that address, through
// the real edge; what is no prefix is a 422 naming the field.
func TestBlockedPrefixSpellings(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	show := newShow(t, rdb)
	onSale(t, rdb, show)
	const adminToken = "adm_edge_blocked_0123456789"
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	edge := startEdge(t, map[string]string{"ADMIN_TOKEN": adminToken, "TRUSTED_PROXIES": "127.0.0.0/8",
		"RATE_EXEMPT": "none"})
	settings := edge + "/admin/v1/shows/" + show + "/queue"

	res, b := do(t, "PUT", settings, `{"enabled":true,"admitPerSecond":1,"maxActive":1,"tokenTtlSeconds":60,`+
		`"botProtection":{"baseDifficulty":1000,"blockedPrefixes":"203.0.113.7/32,::ffff:203.0.113.8,2001:db8:7:7::1,2001:db8:8:8::/96"}}`, admin)
	if res.StatusCode != 200 {
		t.Fatalf("PUT queue settings: %d %s", res.StatusCode, b)
	}
	var st struct {
		Bot struct {
			Blocked string `json:"blockedPrefixes"`
		} `json:"botProtection"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if want := "203.0.113.7,203.0.113.8,2001:db8:7:7::/64,2001:db8:8:8::/64"; st.Bot.Blocked != want {
		t.Errorf("stored blockedPrefixes %q, want %q", st.Bot.Blocked, want)
	}
	res, b = do(t, "POST", edge+"/admin/v1/shows/"+show+"/blocked-prefixes", `{"prefix":"198.51.100.9/32"}`, admin)
	if res.StatusCode != 200 || !strings.Contains(string(b), `"198.51.100.9"`) {
		t.Fatalf("block 198.51.100.9/32: %d %s", res.StatusCode, b)
	}

	join := func(client, user string) (*http.Response, []byte) {
		t.Helper()
		return do(t, "POST", edge+"/queue/"+show+"/join", "", map[string]string{"X-Forwarded-For": client,
			"Authorization": "Bearer " + userToken(t, user), "Content-Type": "application/json"})
	}
	for i, client := range []string{"203.0.113.7", "203.0.113.8", "2001:db8:7:7::1", "2001:db8:8:8:ab::2",
		"198.51.100.9"} {
		res, b := join(client, "fan-"+string(rune('a'+i)))
		p := wantProblem(t, res, b, http.StatusForbidden, waitroom.ReasonPrefixBlocked)
		if p.Extensions["reason"] != waitroom.ReasonPrefixBlocked {
			t.Errorf("client %s: reason %v, want %s", client, p.Extensions["reason"], waitroom.ReasonPrefixBlocked)
		}
	}
	// A client of no blocked prefix is not refused for its network: asked for a proof of work instead.
	res, b = join("203.0.113.9", "fan-z")
	wantProblem(t, res, b, http.StatusForbidden, waitroom.ReasonProofRequired)

	// Unblocking in another spelling finds the stored one.
	res, b = do(t, "DELETE", edge+"/admin/v1/shows/"+show+"/blocked-prefixes?prefix="+url.QueryEscape("::ffff:203.0.113.8"), "", admin)
	if res.StatusCode != 200 || strings.Contains(string(b), `"203.0.113.8"`) {
		t.Fatalf("unblock ::ffff:203.0.113.8: %d %s", res.StatusCode, b)
	}

	for _, body := range []string{`{"botProtection":{"blockedPrefixes":"203.0.113.7,nonsense"}}`,
		`{"botProtection":{"blockedPrefixes":"203.0.113.0/24"}}`} {
		res, b = do(t, "PUT", settings, body, admin)
		p := wantProblem(t, res, b, http.StatusUnprocessableEntity, "validation")
		if !strings.Contains(p.Detail, "blockedPrefixes") {
			t.Errorf("PUT %s: detail %q names no field", body, p.Detail)
		}
	}
	res, b = do(t, "POST", edge+"/admin/v1/shows/"+show+"/blocked-prefixes", `{"prefix":"nonsense"}`, admin)
	if p := wantProblem(t, res, b, http.StatusUnprocessableEntity, "validation"); !strings.Contains(p.Detail, "prefix") {
		t.Errorf("block nonsense: detail %q names no field", p.Detail)
	}
}
