package http

import (
	"encoding/json"
	"testing"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/waitroom"
)

// TestRefusalWords: every reason of waitroom's table has the queue page's words in every language the page is
// written in, each language saying what English says (no part left out or added), and a reason a fresh challenge
// does not help tells the fan why (a title, a hint, words); page/refusals.json holds no reason the table lacks.
func TestRefusalWords(t *testing.T) {
	t.Parallel()
	for _, r := range waitroom.Reasons {
		en, ok := words[r.Name][admission.PageLanguages[0]]
		if !ok {
			t.Errorf("%s has no words", r.Name)
			continue
		}
		if !r.Fresh && (en.Title == "" || en.Hint == "" || en.Say == "") {
			t.Errorf("%s: a fresh challenge does not help it, so the fan must be told why: %+v", r.Name, en)
		}
		for _, lang := range admission.PageLanguages[1:] {
			w, ok := words[r.Name][lang]
			switch {
			case !ok:
				t.Errorf("%s has no words in %s", r.Name, lang)
			case (w.Title == "") != (en.Title == ""), (w.Hint == "") != (en.Hint == ""),
				(w.Say == "") != (en.Say == ""), (w.Guest == "") != (en.Guest == ""):
				t.Errorf("%s in %s says %+v, English %+v", r.Name, lang, w, en)
			}
		}
	}
	for name := range words {
		if _, ok := waitroom.ReasonOf(name); !ok {
			t.Errorf("page/refusals.json has words for %q, which is no reason of the table", name)
		}
	}
	// The page gets each language's words with the table's flags.
	var got map[string]pageRefusal
	if err := json.Unmarshal([]byte(refusalsJSON["hi"]), &got); err != nil {
		t.Fatal(err)
	}
	if r := got[waitroom.ReasonProofRequired]; !r.Fresh || !r.HumanKept {
		t.Errorf("proof-required on the page: %+v, want fresh and humanKept", r)
	}
	if r := got[waitroom.ReasonPrefixBlocked]; r.Fresh || r.Say != words[waitroom.ReasonPrefixBlocked]["hi"].Say {
		t.Errorf("prefix-blocked on the Hindi page: %+v", r)
	}
}
