package flashseat_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainsTechnologyFree: the services' root packages, shared/admission (the admission domain edge, the
// waiting room and booking share) and shared/pow are domains and import only the standard library and
// technology-free contracts; Redis, PostgreSQL, the HTTP framework and image libraries live in subpackages named
// for them. A domain that reached one of these, however indirectly (a shared contract that grew a Redis
// helper, say), fails here, with the chain of imports that brought it in.
func TestDomainsTechnologyFree(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"github.com/redis/",
		"github.com/gofiber/",
		"github.com/valyala/fasthttp",
		"github.com/jackc/pgx",
		"github.com/skip2/go-qrcode",
		"github.com/makiuchi-d/gozxing",
		"rsc.io/qr",
		"github.com/yeqown/go-qrcode",
		"github.com/boombuler/barcode",
	}
	for _, domain := range []string{"booking", "waitroom", "edge", "shared/admission", "shared/pow"} {
		pkg := "github.com/flashseat/flashseat/" + domain
		// Each package with its direct imports: enough to name the path from the domain to the culprit.
		out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		importedBy := map[string]string{}
		var deps []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			deps = append(deps, f[0])
			for _, imp := range f[1:] {
				if _, ok := importedBy[imp]; !ok {
					importedBy[imp] = f[0]
				}
			}
		}
		if len(deps) < 2 {
			t.Fatalf("go list %s listed %d packages: %q", pkg, len(deps), out)
		}
		reported := map[string]bool{} // one line per forbidden library, through the first package found of it
		for _, d := range deps {
			for _, f := range forbidden {
				if !strings.HasPrefix(d, f) || reported[f] {
					continue
				}
				reported[f] = true
				chain := []string{d}
				for p := d; p != pkg && len(chain) < 50; {
					p = importedBy[p]
					chain = append(chain, p)
				}
				t.Errorf("%s depends on %s: %s", domain, d, strings.Join(chain, " <- "))
				break
			}
		}
	}
}

// TestLayersBelowBooking: shared/ is what the services agree on and the waiting room stands on it alone, so no
// package under shared/ or waitroom/ reaches booking/, its tests and test helpers included (a test database helper
// that lived under booking/ once made every store test of shared/ depend on booking). edge/ is held to the same,
// but for edge/e2e, whose end-to-end tests start booking itself.
func TestLayersBelowBooking(t *testing.T) {
	t.Parallel()
	const module = "github.com/flashseat/flashseat/"
	exempt := map[string]bool{module + "edge/e2e": true}
	out, err := exec.Command("go", "list", "./shared/...", "./waitroom/...", "./edge/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var roots []string
	for _, p := range strings.Fields(string(out)) {
		if !exempt[p] {
			roots = append(roots, p)
		}
	}
	if len(roots) < 10 {
		t.Fatalf("go list listed %d packages under shared/, waitroom/ and edge/: %q", len(roots), out)
	}
	// -test adds each package's test variant and test main, whose imports are the tests' own. A test variant is
	// named "path [path.test]", hence the separator.
	args := append([]string{"list", "-deps", "-test", "-f", `{{.ImportPath}}{{range .Imports}}|{{.}}{{end}}`}, roots...)
	out, err = exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v", err)
	}
	importedBy := map[string]string{}
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		deps = append(deps, f[0])
		for _, imp := range f[1:] {
			if _, ok := importedBy[imp]; !ok {
				importedBy[imp] = f[0]
			}
		}
	}
	// A booking package is one whatever variant of it a test built.
	isBooking := func(p string) bool {
		p, _, _ = strings.Cut(p, " ")
		return p == module+"booking" || strings.HasPrefix(p, module+"booking/")
	}
	for _, d := range deps {
		if !isBooking(d) || isBooking(importedBy[d]) {
			continue // report only where the path first enters booking
		}
		chain := []string{d}
		for p := d; importedBy[p] != "" && len(chain) < 50; {
			p = importedBy[p]
			chain = append(chain, p)
		}
		t.Errorf("%s reaches booking: %s", chain[len(chain)-1], strings.Join(chain, " <- "))
	}
}
