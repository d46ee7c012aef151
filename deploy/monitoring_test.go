package deploy_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"sigs.k8s.io/yaml"

	"github.com/flashseat/flashseat/shared/infra/ops"
	"github.com/flashseat/flashseat/waitroom"
)

// TestAlertRules: deploy/monitoring/alerts.yml is a Prometheus rule file whose every alert has an expression,
// a for and a summary, and whose expressions name only metrics the code exports.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("monitoring/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	exported := exportedMetrics(t)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" || r.For == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v lacks an alert name, expression, for or summary", r)
			}
			alerts[r.Alert] = true
			checkExpr(t, r.Alert, r.Expr, exported)
		}
	}
	for _, want := range []string{"AdmissionStalled", "PaymentBreakerOpen", "EdgeHigh5xxRatio", "RedisUnreachable",
		"PostgresUnreachable"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// TestGrafanaDashboard: the dashboard is valid JSON with panels whose every query names exported metrics.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels")
	}
	exported := exportedMetrics(t)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, p.Title, q.Expr, exported)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			checkExpr(t, "template variable", v.Definition, exported)
		}
	}
}

// checkExpr fails the test when expr names a metric not in exported.
func checkExpr(t *testing.T, where, expr string, exported map[string]bool) {
	t.Helper()
	names := metricNames(expr)
	if len(names) == 0 {
		t.Errorf("%s: expression %q names no metric", where, expr)
	}
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && exported[b] {
				base = b
			}
		}
		if !exported[base] {
			t.Errorf("%s: %s is not a metric the code exports", where, n)
		}
	}
}

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
	templateNames = regexp.MustCompile(`\{\{[^}]*\}\}`)
)

// metricNames returns the metric names a PromQL expression (or a Grafana label_values query) selects: what is
// left after strings, label matchers, ranges, grouping clauses, functions and keywords are taken out.
func metricNames(expr string) []string {
	e := templateNames.ReplaceAllString(expr, "")
	e = promStrings.ReplaceAllString(e, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	if inner, ok := strings.CutPrefix(strings.TrimSpace(e), "label_values("); ok { // label_values(metric, label)
		e = strings.SplitN(inner, ",", 2)[0]
	}
	var out []string
	for _, m := range promIdent.FindAllString(e, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[strings.ToLower(m)] {
			continue // a function or aggregation, or a keyword
		}
		out = append(out, m)
	}
	return out
}

// exportedMetrics reads the services' Go source (not tests) for the metric names they register: the Name of
// every prometheus.*Opts literal, the first argument of every prometheus.NewDesc and of ops.StoreUp, and the
// series ops.RedisPool exports under the prefix it is given.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"../booking", "../edge", "../waitroom", "../shared"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if sel, ok := n.Type.(*ast.SelectorExpr); ok && isIdent(sel.X, "prometheus") && strings.HasSuffix(sel.Sel.Name, "Opts") {
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
								addLiteral(out, kv.Value)
							}
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 &&
						(isIdent(sel.X, "prometheus") && sel.Sel.Name == "NewDesc" || isIdent(sel.X, "ops") && sel.Sel.Name == "StoreUp") {
						addLiteral(out, n.Args[0])
					}
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 && isIdent(sel.X, "ops") && sel.Sel.Name == "RedisPool" {
						addRedisPool(t, out, n.Args[0])
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 10 {
		names := make([]string, 0, len(out))
		for n := range out {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("found only %v in the source: the scan is broken", names)
	}
	return out
}

// addRedisPool adds the names of the series ops.RedisPool exports under the literal prefix e, as a registry
// gathers them from a client that has dialled nothing.
func addRedisPool(t *testing.T, out map[string]bool, e ast.Expr) {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return
	}
	prefix, err := strconv.Unquote(lit.Value)
	if err != nil {
		return
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(ops.RedisPool(prefix, rdb))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		out[f.GetName()] = true
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func addLiteral(out map[string]bool, e ast.Expr) {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if s, err := strconv.Unquote(lit.Value); err == nil {
			out[s] = true
		}
	}
}

// TestAlertSuspectReasons: the reasons SuspectedBotsSurging counts are the suspects of waitroom's table of
// reasons, spelled as the edge labels them.
func TestAlertSuspectReasons(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("monitoring/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`waitroom_join_refusals_total\{reason=~"([^"]+)"\}`).FindSubmatch(b)
	if m == nil {
		t.Fatal("alerts.yml counts no refusals by reason")
	}
	got := strings.Split(string(m[1]), "|")
	var want []string
	for _, r := range waitroom.Reasons {
		if r.Suspect {
			want = append(want, r.Name)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("SuspectedBotsSurging counts %v, the table's suspects are %v", got, want)
	}
}
