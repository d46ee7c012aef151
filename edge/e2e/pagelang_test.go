package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/browsertest"
)

// TestQueuePageFollowsTheBrowsersLanguage: on a show whose queue page the operator left in English, a fan whose
// phone is set to Hindi waits on the page in Hindi (its static text and the texts its script writes), and a fan
// whose phone is set to English on the same show waits in English. Through the real edge and booking, with the
// queue and its bot protection on.
func TestQueuePageFollowsTheBrowsersLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, _, show := slowQueue(t, "Hayavadana")
	br := browsertest.New(t)
	text := textOf
	for _, tc := range []struct {
		name          string
		langs         []string
		lang, label   string
		placeInLine   string
		title         string // what the page's script titles the tab with
		navigatorLang string
	}{
		{"fan reading Hindi", []string{"hi-IN", "hi", "en"}, "hi", "बायपास कोड", "कतार में आपका स्थान", "प्रतीक्षा कक्ष · Hayavadana", "hi-IN"},
		{"fan reading English", []string{"en-GB", "en", "hi"}, "en", "Bypass code", "Your place in line", "Waiting room · Hayavadana", "en-GB"},
	} {
		fan := br.Fan(tc.name, 4*time.Minute)
		fan.Languages(tc.langs...)
		fan.Go(p.BaseURL + "/shows/" + show)
		fan.WaitFor("a place in line", `location.pathname === "/queue/`+show+`" && !document.getElementById("waiting").hidden && `+
			text("#position")+` !== ""`)
		if got := fan.Text(`navigator.language`); got != tc.navigatorLang {
			t.Errorf("%s: navigator.language %q, want %q: the browser is not set as the test says", tc.name, got, tc.navigatorLang)
		}
		if got := fan.Text(`document.documentElement.lang`); got != tc.lang {
			t.Errorf("%s: the page's language is %q, want %q", tc.name, got, tc.lang)
		}
		if got := fan.Text(`document.getElementById("bypass-code").labels[0].textContent`); got != tc.label {
			t.Errorf("%s: the code's label %q, want %q", tc.name, got, tc.label)
		}
		if got := fan.Text(`[...document.querySelectorAll("#waiting .muted")].map((e) => e.textContent).join("|")`); !strings.Contains(got, tc.placeInLine) {
			t.Errorf("%s: the place in line reads %q, want %q in it", tc.name, got, tc.placeInLine)
		}
		fan.WaitFor("the tab's title", `document.title.startsWith(`+strconv.Quote(tc.title)+`)`)
		fan.Close()
	}
}
