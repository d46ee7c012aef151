package http

import (
	"encoding/json"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/waitroom"
)

// The queue page's words for each refusal: page/refusals.json, keyed by the reason (waitroom's table of reasons)
// and then by language, each entry the progress line's title and hint and what the page says (guest: what it
// says when a guest session, not a place, was refused). A reason a fresh challenge helps may say nothing (""):
// the page earns the place again without a word. The page gets its language's words with what the table says the
// page must know (fresh, humanKept) in the <html> element's data-refusals, so it names no reason itself: a new
// reason is a row of the table and an entry here. TestRefusalWords keeps the two agreeing.

// refusalWords are one reason's words in one language.
type refusalWords struct {
	Title string `json:"title,omitempty"`
	Hint  string `json:"hint,omitempty"`
	Say   string `json:"say"`
	Guest string `json:"guest,omitempty"`
}

// pageRefusal is what the page gets of one reason: its words, and from the table whether a fresh challenge helps
// and whether a human-check token sent with the refused join is still good.
type pageRefusal struct {
	refusalWords
	Fresh     bool `json:"fresh,omitempty"`
	HumanKept bool `json:"humanKept,omitempty"`
	// Register: registering for the show helps (the page offers it, register.js).
	Register bool `json:"register,omitempty"`
}

// words are page/refusals.json: reason, language, words.
var words = mustWords()

func mustWords() map[string]map[string]refusalWords {
	b, err := pageFS.ReadFile("page/refusals.json")
	if err != nil {
		panic(err)
	}
	var m map[string]map[string]refusalWords
	if err := json.Unmarshal(b, &m); err != nil {
		panic("page/refusals.json: " + err.Error())
	}
	return m
}

// refusalsJSON are each page language's data-refusals: every reason of the table with its words in the language
// (English where the language lacks them).
var refusalsJSON = func() map[string]string {
	out := map[string]string{}
	for _, lang := range admission.PageLanguages {
		m := map[string]pageRefusal{}
		for _, r := range waitroom.Reasons {
			w, ok := words[r.Name][lang]
			if !ok {
				w = words[r.Name][admission.PageLanguages[0]]
			}
			m[r.Name] = pageRefusal{refusalWords: w, Fresh: r.Fresh, HumanKept: r.HumanKept, Register: r.Register}
		}
		b, _ := json.Marshal(m) // strings and bools always marshal
		out[lang] = string(b)
	}
	return out
}()
