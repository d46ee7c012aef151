package deploy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// startNginx runs Debian's nginx with deploy/cdn/nginx.conf.template in front of edge and returns its base URL.
func startNginx(t *testing.T, edge string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin = "/usr/sbin/nginx"; !fileExists(bin) {
			t.Fatal("nginx is not installed (make tools installs it)")
		}
	}
	tmpl, err := os.ReadFile("cdn/nginx.conf.template")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// nginx's workers drop root for an unprivileged user, who must reach the cache and temp directories.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	listen := storetest.FreeAddr(t)
	port := listen[strings.LastIndex(listen, ":")+1:]
	vars := map[string]string{"FLASHSEAT_EDGE": strings.TrimPrefix(edge, "http://"), "LISTEN_PORT": port,
		"CACHE_DIR": filepath.Join(dir, "cache"), "RUN_DIR": dir}
	// Only the template's ${NAME} placeholders, as envsubst with a variable list does; nginx's own $vars stay.
	conf := placeholder.ReplaceAllStringFunc(string(tmpl), func(m string) string { return vars[m[2:len(m)-1]] })
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-p", dir, "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	base := "http://127.0.0.1:" + port
	// SIGTERM, not SIGKILL: a killed nginx master leaves its workers running, orphaned, holding the port.
	serve(t, exec.Command(bin, "-p", dir, "-c", path, "-g", "daemon off;"), syscall.SIGTERM, base, func() string {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return "nginx's error.log:\n" + string(log)
	})
	return base
}

// serve starts cmd, a server answering at base, and waits until its /healthz answers (through it, the
// platform's); it is stopped with stop in t.Cleanup, and killed if it is still running 10 s later. logs tells
// what it said, shown when the test fails.
func serve(t *testing.T, cmd *exec.Cmd, stop os.Signal, base string, logs func() string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(stop)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Log(logs())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30 s:\n%s", cmd.Path, logs())
		}
	}
}

// requester returns a function sending one request to base, redirects not followed, and reading the answer.
func requester(t *testing.T, base string) func(method, path, body string, hdr map[string]string) (*http.Response, string) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(method, path, body string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var placeholder = regexp.MustCompile(`\$\{[A-Z_]+\}`)

// newShow creates, through the operator API, a show on sale now with a row of four seats, its queue on
// (admitting 50 a second, tokens valid 10 minutes) or off, and returns its id.
func newShow(t *testing.T, admin *fsclient.Client, queue bool) string {
	t.Helper()
	ctx := context.Background()
	v, err := admin.CreateVenue(ctx, fsclient.Venue{Name: "Chowdiah Hall", City: "Bangalore",
		Halls: []fsclient.Hall{{Name: "Main", Rows: []fsclient.Row{{Row: "A", Seats: 4, Category: "GOLD"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := admin.CreateEvent(ctx, fsclient.Event{Title: "Violin at noon", Kind: "concert", Genre: "Classical",
		Language: "None", DurationMinutes: 90})
	if err != nil {
		t.Fatal(err)
	}
	show, err := admin.CreateShow(ctx, fsclient.Show{EventID: ev, HallID: v.Halls[0].HallID,
		StartsAt: time.Now().Add(48 * time.Hour), SaleStartsAt: time.Now().Add(-time.Minute), Currency: "INR",
		Prices: map[string]int64{"GOLD": 30000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: queue, AdmitPerSecond: 50, MaxActive: 50,
		TokenTTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	return show
}

// The CDN kit's nginx in front of the real platform: the catalog and the waiting-room page are served from its
// cache as their Cache-Control allows, the queue's event stream arrives unbuffered, and a show's protected reads
// are decided by the edge's gate endpoint: a browser without an admission is sent to the waiting room, an API
// client gets the contract's 403, an admitted fan passes, and nothing gated is ever cached.
func TestNginxInFrontOfTheEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform and nginx")
	}
	t.Parallel()
	p := platformtest.Start(t, platformtest.Options{MaxConns: 6, Edge: map[string]string{"QUEUE_TICK": "100ms"}})
	admin, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	show := newShow(t, admin, true)
	ctx := context.Background()
	cdn := startNginx(t, p.BaseURL)
	do := requester(t, cdn)
	get := func(path string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		return do("GET", path, "", hdr)
	}

	// Public: cached, then served from the cache.
	for _, path := range []string{"/api/v1/events?city=Bangalore", "/api/v1/shows/" + show, "/queue/" + show} {
		first, _ := get(path, nil)
		second, _ := get(path, nil)
		if first.StatusCode != 200 || second.Header.Get("X-Cache-Status") != "HIT" {
			t.Errorf("%s: %d then cache %q (Cache-Control %q), want 200 then a HIT", path, first.StatusCode,
				second.Header.Get("X-Cache-Status"), first.Header.Get("Cache-Control"))
		}
	}

	// Gated, without an admission: the browser goes to the waiting room, the API client gets 403 with queueUrl;
	// neither request reached booking's seat map.
	// nginx itself answers (the edge would have added X-Request-Id): the request went no further than the gate.
	if resp, _ := get("/shows/"+show, map[string]string{"Accept": "text/html"}); resp.StatusCode != 303 ||
		resp.Header.Get("Location") != "/queue/"+show || resp.Header.Get("X-Request-Id") != "" {
		t.Errorf("seat-map page without admission: %d to %q (request id %q), want nginx's 303 to the queue",
			resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-Request-Id"))
	}
	if resp, body := get("/api/v1/shows/"+show+"/seats", nil); resp.StatusCode != 403 ||
		!strings.Contains(body, `"queueUrl":"/queue/`+show+`"`) || resp.Header.Get("X-Request-Id") != "" {
		t.Errorf("seat map without admission: %d %s, want nginx's 403 with queueUrl", resp.StatusCode, body)
	}

	// A fan joins through nginx, and the queue's stream arrives unbuffered: the first event within seconds.
	fan, err := fsclient.New(cdn, http.DefaultTransport, fsclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := fan.NewGuest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fan.Join(ctx, g.Token, show, ""); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", cdn+"/queue/"+show+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+g.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("event stream through nginx: %v", err)
	}
	var admissionToken string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && admissionToken == "" {
		if line := sc.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, "admissionToken") {
			admissionToken = strings.Split(strings.Split(line, `"admissionToken":"`)[1], `"`)[0]
		}
	}
	resp.Body.Close()
	if admissionToken == "" {
		t.Fatalf("no admitted event arrived through nginx within 10 s (buffered?): %v", sc.Err())
	}

	// Admitted: the gate lets the fan through, by header and by the browser's cookie, and nothing is cached.
	hdr := map[string]string{"Authorization": "Bearer " + g.Token, admission.Header: admissionToken}
	for range 2 {
		resp, _ := get("/api/v1/shows/"+show+"/seats", hdr)
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache-Status") == "HIT" {
			t.Fatalf("admitted seat map: %d, cache %q", resp.StatusCode, resp.Header.Get("X-Cache-Status"))
		}
	}
	page, _ := get("/shows/"+show, map[string]string{"Accept": "text/html",
		"Cookie": admission.CookieName(show) + "=" + admissionToken})
	if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Cache-Control"), "private") {
		t.Errorf("admitted seat-map page: %d, Cache-Control %q, want 200 private", page.StatusCode, page.Header.Get("Cache-Control"))
	}
	// ...and the next browser without an admission is still refused: the admitted fan's page was not cached.
	if resp, _ := get("/shows/"+show, map[string]string{"Accept": "text/html"}); resp.StatusCode != 303 {
		t.Errorf("seat-map page after an admitted fan's: %d, want 303", resp.StatusCode)
	}
}
