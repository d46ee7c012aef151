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
