package http

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

// TestPagesNameProblemTypes: the pages (booking's, the console's, the waiting room's) branch on problem types only
// through the browser toolkit's api.js Problem (shared/pagekit), and each of its entries is the shared/problem
// constant of the same name, spelled alike: a slug renamed on one side fails here, not in a fan's browser. No page
// names a reason of waitroom's table of refusals: the pages get them, with their words, from the server.
func TestPagesNameProblemTypes(t *testing.T) {
	t.Parallel()
	api, err := os.ReadFile(filepath.Join("..", "..", "shared", "pagekit", "js", "api.js"))
	if err != nil {
		t.Fatal(err)
	}
	sameNames(t, api, "Problem", problemConstants(t, filepath.Join("..", "..", "shared", "problem", "problem.go")), "")

	// A page that compares a kind with a string of its own would escape the check above.
	literal := regexp.MustCompile(`\.kind\s*[!=]==?\s*["'\x60]`)
	var scripts []string
	for _, dir := range []string{"page/assets", "page/assets/gate", "../../shared/pagekit/js", "../../edge/console/page", "../../waitroom/http/page"} {
		found, err := filepath.Glob(filepath.Join(filepath.FromSlash(dir), "*.js"))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, found...)
	}
	if len(scripts) < 10 {
		t.Fatalf("found only %d page scripts: %v", len(scripts), scripts)
	}
	for _, path := range scripts {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if loc := literal.FindIndex(src); loc != nil {
			t.Errorf("%s compares a problem kind with a literal (%q); use api.js's Problem", path, src[loc[0]:loc[1]])
		}
		for _, r := range waitroom.Reasons {
			for _, q := range []string{`"`, `'`, "`"} {
				if strings.Contains(string(src), q+r.Name+q) {
					t.Errorf("%s names the refusal %s; a page reads refusals from what the server sends", path, r.Name)
				}
			}
		}
	}
}

// sameNames checks api.js's frozen object: each entry is the Go constant prefix+name, spelled alike.
func sameNames(t *testing.T, api []byte, object string, consts map[string]string, prefix string) {
	t.Helper()
	block := regexp.MustCompile(`(?s)export const ` + object + ` = Object\.freeze\(\{(.*?)\}\);`).FindSubmatch(api)
	if block == nil {
		t.Fatalf("api.js exports no %s = Object.freeze({...})", object)
	}
	entries := regexp.MustCompile(`(\w+): "([^"]*)"`).FindAllSubmatch(block[1], -1)
	if len(entries) == 0 {
		t.Fatalf("api.js's %s names nothing", object)
	}
	for _, e := range entries {
		name, slug := string(e[1]), string(e[2])
		want, ok := consts[prefix+name]
		switch {
		case !ok:
			t.Errorf("api.js's %s.%s is not the Go constant %s%s", object, name, prefix, name)
		case slug != want:
			t.Errorf("api.js's %s.%s = %q, Go's %s%s %q", object, name, slug, prefix, name, want)
		}
	}
}

// problemConstants reads the string constants of the Go file at path, by name.
func problemConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}
