package http

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestGatePrecache: the door page's service worker caches every file the page loads, so that it opens offline:
// gate.js and everything it imports, statically or on demand (jsQR), and the stylesheet, and nothing more.
func TestGatePrecache(t *testing.T) {
	t.Parallel()
	imports := regexp.MustCompile(`(?:from\s+|import\s*\(\s*)"\./([\w.-]+\.js)"|new URL\("\./([\w.-]+\.js)"`)
	files := map[string]string{} // name → where it lives
	for _, pattern := range []string{"page/assets/*", "page/assets/*/*.js"} {
		names, _ := fs.Glob(pageFS, pattern)
		for _, n := range names {
			files[path.Base(n)] = n
		}
	}
	read := func(name string) string {
		if p, ok := files[name]; ok {
			b, err := fs.ReadFile(pageFS, p)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "shared", "pagekit", "js", name)) // a toolkit module
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(b)
	}
	want := map[string]bool{"site.css": true}
	var walk func(string)
	walk = func(name string) {
		if want[name] {
			return
		}
		want[name] = true
		for _, m := range imports.FindAllStringSubmatch(read(name), -1) {
			walk(m[1] + m[2])
		}
	}
	walk("gate.js")
	var got []string
	for n := range want {
		got = append(got, n)
	}
	slices.Sort(got)
	have := slices.Sorted(slices.Values(gateAssets))
	if !slices.Equal(got, have) {
		t.Errorf("gateAssets %v, want %v", have, got)
	}
	if _, err := gateWorkerFile(); err != nil {
		t.Fatal(err)
	}
}
