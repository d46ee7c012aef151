// Package acceptlang picks the language to answer a browser in from its Accept-Language header (RFC 9110
// §12.5.4), by golang.org/x/text/language: q-values order the browser's languages and q=0 refuses one; a region
// variant (hi-IN, en-GB) matches its language, as does a language whose readers CLDR says read another (Marathi
// readers get Hindi). A header that is not well-formed, or that names only "*" or languages not offered, picks
// none, and the caller falls back to its own default. Both services' pages and booking's notifications pick here,
// so a browser is answered in the same language wherever it goes.
package acceptlang

import "golang.org/x/text/language"

// Matcher picks among a fixed list of languages; build one per list, once (building is the costly part).
type Matcher struct {
	langs []string
	m     language.Matcher
}

// New returns a Matcher offering langs, BCP 47 tags as the caller names them ("en", "hi"); Pick answers with those
// strings, whatever the header's spelling.
func New(langs ...string) *Matcher {
	tags := make([]language.Tag, len(langs))
	for i, l := range langs {
		tags[i] = language.Make(l)
	}
	return &Matcher{langs: langs, m: language.NewMatcher(tags)}
}

// Pick returns the offered language header prefers most, and false when it prefers none of them.
func (m *Matcher) Pick(header string) (string, bool) {
	if header == "" {
		return "", false // API clients and scripts: not worth a parse
	}
	tags, _, err := language.ParseAcceptLanguage(header) // sorted by q, q=0 dropped
	if err != nil || len(tags) == 0 {
		return "", false
	}
	// The matcher always names a language, its first when nothing matches (confidence No); Low is its guess
	// that a reader might cope, which is no reason to prefer it over the caller's default.
	_, i, conf := m.m.Match(tags...)
	if conf < language.High {
		return "", false
	}
	return m.langs[i], true
}
