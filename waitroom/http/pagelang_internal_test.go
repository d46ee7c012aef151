package http

import (
	"os"
	"regexp"
	"testing"

	"github.com/flashseat/flashseat/shared/admission"
)

// TestPageTexts: every text of queue.html and queue.js has its words in each other language of the page, and
// each language's file holds no text the page no longer has: a text added in English only fails here, not in a
// fan's browser.
func TestPageTexts(t *testing.T) {
	t.Parallel()
	html, err := os.ReadFile("page/queue.html")
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("page/queue.js")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\{\{\.T "((?:[^"\\]|\\.)*)"\}\}`).FindAllSubmatch(html, -1) {
		used[string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`\btf?\("((?:[^"\\]|\\.)*)"`).FindAllSubmatch(js, -1) {
		used[string(m[1])] = true
	}
	if len(used) < 40 {
		t.Fatalf("found only %d texts: the patterns no longer match the page", len(used))
	}
	for _, lang := range admission.PageLanguages[1:] {
		for s := range used {
			if texts[lang][s] == "" {
				t.Errorf("%s lacks %q", lang, s)
			}
		}
		for s := range texts[lang] {
			if !used[s] {
				t.Errorf("%s has %q, which the page no longer says", lang, s)
			}
		}
	}
}

func TestPageLanguage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, accept, show, want string
	}{
		{"nothing asked, the show's", "", "hi", "hi"},
		{"nothing asked, no show language", "", "", "en"},
		{"the browser's first", "hi-IN,hi;q=0.9,en;q=0.8", "en", "hi"},
		{"by preference, not order", "en;q=0.5, hi;q=0.9", "en", "hi"},
		{"an English browser on a Hindi show", "en-US,en;q=0.9", "hi", "en"},
		{"none supported: the show's", "fr-FR,fr;q=0.9,de;q=0.5", "hi", "hi"},
		{"refused with q=0", "hi;q=0, fr", "en", "en"},
		{"malformed", ";;;,,q=x", "hi", "hi"},
		{"a British browser on a Hindi show", "en-GB", "hi", "en"},
		{"any language: the show's", "*", "hi", "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := pageLanguage(tt.accept, tt.show); got != tt.want {
				t.Errorf("pageLanguage(%q, %q) = %q, want %q", tt.accept, tt.show, got, tt.want)
			}
		})
	}
}
