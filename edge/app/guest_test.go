package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/waitroom"
)

// TestGuestMintingCostsSomething: from one address, the first guest identities come free; past GUEST_FREE each
// needs a proof of work (403 with a challenge, then the solution in X-Proof), a proof buys one identity, and past
// GUEST_LIMIT the address is refused (429) whatever it brings. Another address is not affected.
func TestGuestMintingCostsSomething(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL, "RATE_EXEMPT": "none",
		"TRUSTED_PROXIES": "127.0.0.0/8", "GUEST_FREE": "3", "GUEST_LIMIT": "6"})
	addr := fmt.Sprintf("198.18.%d.%d", rand.IntN(250)+1, rand.IntN(250)+1)
	other := fmt.Sprintf("198.19.%d.%d", rand.IntN(250)+1, rand.IntN(250)+1)
	rdb := testRedis(t)
	t.Cleanup(func() { rdb.HDel(context.Background(), "{guest}:pressure", addr, other) })
	mint := func(client, proof string) (*http.Response, []byte) {
		hdr := map[string]string{"X-Forwarded-For": client}
		if proof != "" {
			hdr["X-Proof"] = proof
		}
		return do(t, "POST", edge+"/api/v1/auth/guest", "", hdr)
	}
	for i := 0; i < 3; i++ {
		if resp, b := mint(addr, ""); resp.StatusCode != 201 {
			t.Fatalf("free identity %d: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, b := mint(addr, "")
	p := wantProblem(t, resp, b, http.StatusForbidden, waitroom.ReasonProofRequired)
	raw, _ := json.Marshal(p.Extensions["challenge"])
	var ch pow.Challenge
	if err := json.Unmarshal(raw, &ch); err != nil || ch.Challenge == "" {
		t.Fatalf("no challenge in %s", b)
	}
	n, ok := pow.Solve(ch, 2, nil)
	if !ok {
		t.Fatal("no solution")
	}
	proof := pow.Encode(ch, n, time.Millisecond)
	if resp, b := mint(addr, proof); resp.StatusCode != 201 {
		t.Fatalf("identity with a proof: %d %s", resp.StatusCode, b)
	}
	resp, b = mint(addr, proof)
	wantProblem(t, resp, b, http.StatusConflict, waitroom.ReasonProofReplayed)
	resp, b = mint(addr, "garbage")
	wantProblem(t, resp, b, http.StatusUnprocessableEntity, waitroom.ReasonProofInvalid)
	if resp, b := mint(other, ""); resp.StatusCode != 201 {
		t.Fatalf("another address: %d %s", resp.StatusCode, b)
	}
	for i := 0; i < 3; i++ {
		mint(addr, "")
	}
	resp, b = mint(addr, "")
	wantProblem(t, resp, b, http.StatusTooManyRequests, waitroom.ReasonPrefixLimited)
	if s := resp.Header.Get("Retry-After"); s == "" {
		t.Fatal("prefix-limited without Retry-After")
	}
}
