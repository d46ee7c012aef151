package http

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flashseat/flashseat/shared/acceptlang"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pagekit"
)

// The queue page's languages and the operator's message. The page is written in English; each other language of
// admission.PageLanguages has a file page/texts/{lang}.json that maps every English text of queue.html and
// queue.js to its own (the approach of booking's notifications: a file per language, English when a text is
// missing). The page is rendered in the browser's language when Accept-Language names one of them, else in the
// show's page language; its script gets the same texts in the <html> element's data-texts. Rendered pages are
// kept per language and page settings (pageKey), so a crowd costs one render per show's message, not one per fan.

// texts are each language's texts, keyed by the English; English has none.
var texts = mustTexts()

func mustTexts() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, lang := range admission.PageLanguages[1:] {
		b, err := pageFS.ReadFile("page/texts/" + lang + ".json")
		if err != nil {
			panic(err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			panic("page/texts/" + lang + ".json: " + err.Error())
		}
		out[lang] = m
	}
	return out
}

// pageLanguages picks among the languages the page is written in.
var pageLanguages = acceptlang.New(admission.PageLanguages...)

// pageLanguage picks the page's language: the one of the browser's (Accept-Language, by preference) that the page
// is written in, else the show's.
func pageLanguage(accept, show string) string {
	if lang, ok := pageLanguages.Pick(accept); ok {
		return lang
	}
	if admission.PageLanguage(show) {
		return show
	}
	return admission.PageLanguages[0]
}

// pageView is what queue.html is rendered from.
type pageView struct {
	CSS, Script, Worker string
	Lang                string
	Texts               string // the script's texts, JSON
	Message             string
	MessageLang         string // the language the operator wrote the message in
	dict                map[string]string
}

// T is the page's text for the English s.
func (v pageView) T(s string) string {
	if t, ok := v.dict[s]; ok {
		return t
	}
	return s
}

// pageKey is everything a rendering of the page depends on beyond the embedded files, and so the key it is kept
// under: the language it is written in and the show's page settings, whole. A field added to admission.Page is
// part of the key without anyone having to remember it (one that cannot be compared does not compile here), and
// two different settings can never share a key, as they could when the key was a string joined from fields.
type pageKey struct {
	lang string
	page admission.Page
}

// renders keeps rendered pages by key (bounded: messages are the operators').
var renders, _ = lru.New[pageKey, pagekit.File](256) // errs only for a size below 1

// rendered returns the page k describes, rendered once and kept.
func rendered(k pageKey) pagekit.File {
	if f, ok := renders.Get(k); ok {
		return f
	}
	f := render(k)
	renders.Add(k, f)
	return f
}

// render renders the page from k alone.
func render(k pageKey) pagekit.File {
	dict := texts[k.lang]
	if dict == nil {
		dict = map[string]string{} // English: "{}", not "null", for the script
	}
	js, _ := json.Marshal(dict) // a map of strings always marshals
	v := site.view
	v.Lang, v.Texts, v.Message, v.MessageLang, v.dict = k.lang, string(js), k.page.Message, k.page.Language, dict
	var b bytes.Buffer
	if err := site.tmpl.Execute(&b, v); err != nil {
		panic(err) // the template and its data are ours: every test would fail first
	}
	return pagekit.NewFile(b.Bytes(), fiber.MIMETextHTMLCharsetUTF8)
}
