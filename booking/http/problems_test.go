package http

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestPagesNameProblemTypes: the pages branch on problem types only through api.js's Problem, and each of its
// entries is the shared/problem constant of the same name, spelled alike: a slug renamed on one side fails here,
// not in a fan's browser.
func TestPagesNameProblemTypes(t *testing.T) {
	t.Parallel()
	slugs := problemConstants(t, filepath.Join("..", "..", "shared", "problem", "problem.go"))
	api, err := os.ReadFile(filepath.Join("page", "assets", "api.js"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)export const Problem = Object\.freeze\(\{(.*?)\}\);`).FindSubmatch(api)
	if block == nil {
		t.Fatal("api.js exports no Problem = Object.freeze({...})")
	}
	entries := regexp.MustCompile(`(\w+): "([^"]*)"`).FindAllSubmatch(block[1], -1)
	if len(entries) == 0 {
		t.Fatal("api.js's Problem names no problem type")
	}
	for _, e := range entries {
		name, slug := string(e[1]), string(e[2])
		want, ok := slugs[name]
		switch {
		case !ok:
			t.Errorf("api.js's Problem.%s is not a constant of shared/problem", name)
		case slug != want:
			t.Errorf("api.js's Problem.%s = %q, shared/problem's %q", name, slug, want)
		}
	}

	// A page that compares a kind with a string of its own would escape the check above.
	literal := regexp.MustCompile(`\.kind\s*[!=]==?\s*["'\x60]`)
	scripts, err := filepath.Glob(filepath.Join("page", "assets", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range scripts {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if loc := literal.FindIndex(src); loc != nil {
			t.Errorf("%s compares a problem kind with a literal (%q); use api.js's Problem", path, src[loc[0]:loc[1]])
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
