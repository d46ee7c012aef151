// The repository's root holds no Go package, only this test: it checks openapi.yaml against the routes the
// services actually register, so the contract cannot drift from the code unnoticed.
package flashseat_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v4"

	"github.com/flashseat/flashseat/booking"
	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/edge/console"
	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/waitroom"
	waitroomhttp "github.com/flashseat/flashseat/waitroom/http"
)

// openAPI loads and validates openapi.yaml: a YAML slip (an unquoted comma in a flow map reads as an extra key)
// fails here, not in a client generator.
func openAPI(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	// YAML parsers keep the last of two equal keys without a word: two branches that both add a path or a
	// schema would silently lose one of them.
	duplicateKeys(t, &root)
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc
}

func duplicateKeys(t *testing.T, n *yaml.Node) {
	t.Helper()
	if n.Kind == yaml.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if line, dup := seen[k.Value]; dup {
				t.Errorf("openapi.yaml:%d: key %q repeats the one on line %d", k.Line, k.Value, line)
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		duplicateKeys(t, c)
	}
}

func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	openAPI(t)
}

// served lists "METHOD /path/{param}" for every route the edge (with the waiting room mounted) and booking (with
// payments and the waitlist configured) register, in OpenAPI's path syntax.
func served(t *testing.T) map[string]bool {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := bookinghttp.New(bookinghttp.Config{Checkout: &booking.Checkout{}, Waitlist: &booking.Waitlist{},
		Webhooks: &webhook.Service{}, Contacts: &booking.Contacts{}, Audit: &audit.Log{}})
	e := edgehttp.New(edgehttp.Config{
		Proxy:    edgehttp.ProxyConfig{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		Registry: prometheus.NewRegistry(),
		Log:      log,
	})
	console.New(console.Config{Log: log}).Mount(e.App)
	waitroomhttp.New(waitroomhttp.Config{Log: log}).Mount(e.App)
	param := regexp.MustCompile(`:([A-Za-z]+)`)
	out := map[string]bool{}
	for _, app := range []*fiber.App{b.App(), e.App} {
		for _, r := range app.GetRoutes(true) {
			if r.Method == fiber.MethodHead || strings.Contains(r.Path, "*") || strings.HasPrefix(r.Path, "/assets/") {
				continue // fiber adds HEAD to every GET; the catch-all proxy and static assets are not API
			}
			path := strings.TrimSuffix(param.ReplaceAllString(r.Path, "{$1}"), "/")
			if path == "" {
				path = "/"
			}
			out[r.Method+" "+path] = true
		}
	}
	return out
}

// Every route the code serves is in openapi.yaml, and every operation openapi.yaml names is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc := openAPI(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	code := served(t)
	var missing, stale []string
	for r := range code {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !code[r] {
			stale = append(stale, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("served but not in openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("in openapi.yaml but not served:\n  %s", strings.Join(stale, "\n  "))
	}
}

// TestOpenAPIRefusalReasons: JoinRefusal's reason enum is waitroom's table of reasons, no more and no fewer, and
// Problem's reason enum holds each of them (beside the admission token's reasons).
func TestOpenAPIRefusalReasons(t *testing.T) {
	t.Parallel()
	doc := openAPI(t)
	var want []string
	for _, r := range waitroom.Reasons {
		want = append(want, r.Name)
	}
	sort.Strings(want)
	enum := func(s *openapi3.Schema) []string {
		var out []string
		if p := s.Properties["reason"]; p != nil {
			for _, v := range p.Value.Enum {
				out = append(out, v.(string))
			}
		}
		sort.Strings(out)
		return out
	}
	var join []string
	for _, part := range doc.Components.Schemas["JoinRefusal"].Value.AllOf {
		if part.Ref == "" { // its own members, not Problem's
			join = append(join, enum(part.Value)...)
		}
	}
	sort.Strings(join)
	if strings.Join(join, " ") != strings.Join(want, " ") {
		t.Errorf("JoinRefusal's reason enum %v, the table's reasons %v", join, want)
	}
	problemReasons := map[string]bool{}
	for _, r := range enum(doc.Components.Schemas["Problem"].Value) {
		problemReasons[r] = true
	}
	for _, r := range want {
		if !problemReasons[r] {
			t.Errorf("Problem's reason enum lacks %s", r)
		}
	}
}
