package deploy_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

const workerDir = "cdn/worker"

// workerTools finds node and the workerd that deploy/cdn/worker's package.json pins, installing it with npm ci
// when it is missing (make tools does the same). Without node the test is skipped: the worker is JavaScript.
func workerTools(t *testing.T) (node, workerd string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Cloudflare Worker (deploy/cdn/worker) is tested with Node.js and workerd")
	}
	workerd, err = filepath.Abs(filepath.Join(workerDir, "node_modules", ".bin", "workerd"))
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(workerd) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatal("workerd is not installed and npm is missing: run make tools")
		}
		t.Log("installing workerd: npm ci in " + workerDir)
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = workerDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	return node, workerd
}

// startWorker serves deploy/cdn/worker under workerd, Cloudflare's Workers runtime, in front of origin, and
// returns its base URL.
func startWorker(t *testing.T, workerd, origin string) string {
	t.Helper()
	addr := storetest.FreeAddr(t)
	cmd := exec.Command(workerd, "serve", "workerd.capnp", "--socket-addr", "http="+addr)
	cmd.Dir = workerDir
	cmd.Env = append(os.Environ(), "ORIGIN="+origin)
	logPath := filepath.Join(t.TempDir(), "workerd.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cmd.Stdout, cmd.Stderr = log, log
	base := "http://" + addr
	serve(t, cmd, os.Kill, base, func() string { b, _ := os.ReadFile(logPath); return "workerd's output:\n" + string(b) })
	return base
}

// admitted joins show's queue as a new guest and waits for the admission: the guest's user token, the
// admission token and the place receipt join handed out.
func admitted(t *testing.T, fan *fsclient.Client, show string) (user, adm, receipt string) {
	t.Helper()
	ctx := context.Background()
	g, _, err := fan.NewGuest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := fan.Join(ctx, g.Token, show, "")
	if err != nil {
		t.Fatal(err)
	}
	receipt = q.Receipt
	for deadline := time.Now().Add(20 * time.Second); q.AdmissionToken == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not admitted to %s within 20 s: %+v", show, q)
		}
		if q, _, err = fan.QueueStatus(ctx, g.Token, show); err != nil {
			t.Fatal(err)
		}
	}
	return g.Token, q.AdmissionToken, receipt
}

// The Cloudflare Worker of the CDN kit, under workerd in front of the real platform, with the platform's real
// JWKS and admission tokens a fan got through the queue: fans without an acceptable admission are turned away
// at the worker (a browser to the waiting room, an API client with 401/403 problem+json) and never reach the
// edge; admitted fans, shows without a queue and open routes pass; a revoked token passes the worker, which
// cannot know, and is refused by the edge. Then the worker's own tests (node --test) check the token checks
// and the JWKS cache against the same JWKS and tokens.
func TestWorkerInFrontOfTheEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform and workerd")
	}
	node, workerd := workerTools(t)
	t.Parallel()
	p := platformtest.Start(t, platformtest.Options{MaxConns: 6, Edge: map[string]string{"QUEUE_TICK": "100ms"}})
	admin, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	queued, other, open := newShow(t, admin, true), newShow(t, admin, true), newShow(t, admin, false)
	fan, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	user, adm, receipt := admitted(t, fan, queued)
	cdn := startWorker(t, workerd, p.BaseURL)

	do := requester(t, cdn)
	// The edge stamps every answer with X-Request-Id: its absence shows the worker answered alone.
	fromEdge := func(r *http.Response) bool { return r.Header.Get("X-Request-Id") != "" }
	seats := func(show string) string { return "/api/v1/shows/" + show + "/seats" }
	bearer := "Bearer " + user
	html := map[string]string{"Accept": "text/html"}

	// Open routes pass untouched.
	if resp, _ := do("GET", "/api/v1/shows/"+queued, "", nil); resp.StatusCode != 200 || !fromEdge(resp) {
		t.Errorf("show detail through the worker: %d (from the edge %v), want the edge's 200", resp.StatusCode, fromEdge(resp))
	}

	// Turned away at the worker.
	if resp, _ := do("GET", "/shows/"+queued, "", html); resp.StatusCode != 303 ||
		resp.Header.Get("Location") != "/queue/"+queued || fromEdge(resp) {
		t.Errorf("seat-map page without admission: %d to %q (from the edge %v), want the worker's 303 to the queue",
			resp.StatusCode, resp.Header.Get("Location"), fromEdge(resp))
	}
	refusals := []struct {
		name, path string
		hdr        map[string]string
		status     int
	}{
		{"no token", seats(queued), map[string]string{"Authorization": bearer}, 401},
		{"no token, path spelled otherwise", "/API/v1/Shows/" + queued + "/seats/", nil, 401},
		{"another show's token", seats(other), map[string]string{admission.Header: adm}, 403},
		{"forged signature", seats(queued), map[string]string{admission.Header: forge(adm)}, 403},
		{"a place receipt (another audience)", seats(queued), map[string]string{admission.Header: receipt}, 403},
		{"another show's token in its cookie", "/api/v1/shows/" + other + "/seats/stream",
			map[string]string{"Cookie": admission.CookieName(other) + "=" + adm}, 403},
	}
	for _, tc := range refusals {
		resp, body := do("GET", tc.path, "", tc.hdr)
		var p struct {
			Type, QueueURL string
		}
		_ = json.Unmarshal([]byte(body), &p)
		if resp.StatusCode != tc.status || fromEdge(resp) || resp.Header.Get("Content-Type") != "application/problem+json" ||
			!strings.HasSuffix(p.Type, "/queue-required") || p.QueueURL != "/queue/"+strings.Split(tc.path, "/")[4] {
			t.Errorf("%s: %d %s (from the edge %v), want the worker's %d queue-required", tc.name, resp.StatusCode, body,
				fromEdge(resp), tc.status)
		}
	}
	hold := `{"showId":"` + other + `","seatIds":["x"]}`
	if resp, body := do("POST", "/api/v1/bookings/hold", hold, map[string]string{"Authorization": bearer,
		"Content-Type": "application/json", admission.Header: adm}); resp.StatusCode != 403 || fromEdge(resp) {
		t.Errorf("hold on another show: %d %s (from the edge %v), want the worker's 403", resp.StatusCode, body, fromEdge(resp))
	}
	if resp, body := do("POST", "/api/v1/bookings/b1/pay", `{}`, map[string]string{"Authorization": bearer,
		"Content-Type": "application/json", admission.Header: forge(adm)}); resp.StatusCode != 403 || fromEdge(resp) {
		t.Errorf("pay with a forged token: %d %s (from the edge %v), want the worker's 403", resp.StatusCode, body, fromEdge(resp))
	}

	// Passed to the edge: the admitted fan (by header, by the browser's cookie), a show without a queue.
	resp, body := do("GET", seats(queued), "", map[string]string{"Authorization": bearer, admission.Header: adm})
	var seatMap fsclient.SeatMap
	if err := json.Unmarshal([]byte(body), &seatMap); resp.StatusCode != 200 || !fromEdge(resp) || err != nil ||
		len(seatMap.Seats) == 0 {
		t.Fatalf("admitted seat map: %d %s (from the edge %v), want the seat map", resp.StatusCode, body, fromEdge(resp))
	}
	if resp, _ := do("GET", "/shows/"+queued, "", map[string]string{"Accept": "text/html",
		"Cookie": admission.CookieName(queued) + "=" + adm}); resp.StatusCode != 200 || !fromEdge(resp) {
		t.Errorf("admitted seat-map page by cookie: %d (from the edge %v), want the page", resp.StatusCode, fromEdge(resp))
	}
	if resp, _ := do("GET", seats(open), "", nil); resp.StatusCode != 200 || !fromEdge(resp) {
		t.Errorf("seat map of a show without a queue: %d (from the edge %v), want it passed", resp.StatusCode, fromEdge(resp))
	}
	// The seat stream comes through as it is written: its opening at once, then the event of the hold below.
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sreq, _ := http.NewRequestWithContext(sctx, "GET", cdn+seats(queued)+"/stream", nil)
	sreq.Header.Set("Authorization", bearer)
	sreq.Header.Set(admission.Header, adm)
	stream, err := http.DefaultClient.Do(sreq)
	if err != nil || stream.StatusCode != 200 || !fromEdge(stream) {
		t.Fatalf("seat stream through the worker: %v %v", stream, err)
	}
	defer stream.Body.Close()
	lines := bufio.NewScanner(stream.Body)
	if !lines.Scan() || lines.Text() != "retry: 2000" {
		t.Fatalf("seat stream's first line: %q (%v), want it at once", lines.Text(), lines.Err())
	}
	if resp, _ := do("POST", "/api/v1/bookings/hold", `{"showId":"`+queued+`","seatIds":["`+seatMap.Seats[0].SeatID+`"]}`,
		map[string]string{"Authorization": bearer, "Content-Type": "application/json", "Idempotency-Key": "worker-hold-1", admission.Header: adm}); resp.StatusCode != 201 {
		t.Errorf("admitted hold through the worker: %d, want 201", resp.StatusCode)
	}
	for lines.Scan() && lines.Text() != "event: seat" {
	}
	if lines.Text() != "event: seat" {
		t.Errorf("no seat event through the worker's stream within 15 s of the hold: %v", lines.Err())
	}
	cancel()

	// Revocation is the origin's: the worker still passes the token, the edge refuses it.
	jti := claim(t, adm, "jti")
	rev, _ := http.NewRequest("POST", p.BaseURL+"/admin/v1/shows/"+queued+"/admissions/"+jti+"/revoke", nil)
	rev.Header.Set("Authorization", "Bearer "+p.AdminToken)
	if resp, err := http.DefaultClient.Do(rev); err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, _ := do("GET", seats(queued), "", map[string]string{"Authorization": bearer, admission.Header: adm})
		if resp.StatusCode == 403 && fromEdge(resp) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked token: %d (from the edge %v), want the edge's 403", resp.StatusCode, fromEdge(resp))
		}
	}

	// The worker's own tests, against the same JWKS and tokens.
	cmd := exec.Command(node, "--test", "--test-reporter=tap", "test/")
	cmd.Dir = workerDir
	cmd.Env = append(os.Environ(), "FLASHSEAT_ORIGIN="+p.BaseURL, "FLASHSEAT_SHOW="+queued,
		"FLASHSEAT_ADMISSION_TOKEN="+adm, "FLASHSEAT_PLACE_RECEIPT="+receipt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`(?m)^# (pass|skipped) (\d+)$`).FindAllStringSubmatch(string(out), -1); len(m) != 2 ||
		m[0][2] == "0" || m[1][2] != "0" {
		t.Fatalf("node --test ran no test or skipped some:\n%s", out)
	}
}

// forge flips the last signature character of a JWT, keeping it well-formed.
func forge(jwt string) string {
	last := jwt[len(jwt)-2]
	swap := byte('A')
	if last == 'A' {
		swap = 'B'
	}
	return jwt[:len(jwt)-2] + string(swap) + jwt[len(jwt)-1:]
}

// claim reads a claim of a JWT without verifying it.
func claim(t *testing.T, jwt, name string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	s, _ := c[name].(string)
	return s
}
