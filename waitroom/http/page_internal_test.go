package http

import (
	"reflect"
	"testing"

	"github.com/flashseat/flashseat/shared/admission"
)

// TestPageCSP: with a human check configured, the page's policy lets in exactly its widget's origins, each in its
// own directive; without one, nothing but the page's own files.
func TestPageCSP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  PageSources
		want string
	}{
		{"no human check", PageSources{}, "default-src 'self'; script-src 'self'; style-src 'self'; " +
			"img-src 'self' data:; connect-src 'self'; frame-src 'none'; worker-src 'self'; object-src 'none'; " +
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
		{"hCaptcha", PageSources{Script: []string{"https://hcaptcha.com", "https://*.hcaptcha.com"},
			Frame: []string{"https://hcaptcha.com"}, Style: []string{"https://hcaptcha.com"},
			Connect: []string{"https://*.hcaptcha.com"}},
			"default-src 'self'; script-src 'self' https://hcaptcha.com https://*.hcaptcha.com; " +
				"style-src 'self' https://hcaptcha.com; img-src 'self' data:; connect-src 'self' https://*.hcaptcha.com; " +
				"frame-src https://hcaptcha.com; worker-src 'self'; object-src 'none'; form-action 'self'; " +
				"frame-ancestors 'none'; base-uri 'none'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := pageCSP(tt.src); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestRenderedNeverStale: every field of the show's page settings changes the page, and a page rendered before
// the change is not served after it. A field added to admission.Page is covered here without naming it; one that
// rightly leaves the page as it is would go in unseen, with the reason.
func TestRenderedNeverStale(t *testing.T) {
	t.Parallel()
	unseen := map[string]string{} // field name: why the page does not show it
	typ := reflect.TypeFor[admission.Page]()
	if typ.NumField() < 2 {
		t.Fatalf("admission.Page has %d fields: the test no longer sees them", typ.NumField())
	}
	for i := range typ.NumField() {
		field := typ.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			t.Parallel()
			for _, lang := range admission.PageLanguages {
				before := admission.Page{Message: "Doors at seven: TestRenderedNeverStale", Language: "hi"}
				after := before
				v := reflect.ValueOf(&after).Elem().Field(i)
				switch v.Kind() {
				case reflect.String:
					v.SetString(v.String() + "-changed")
				case reflect.Bool:
					v.SetBool(!v.Bool())
				case reflect.Int, reflect.Int64, reflect.Int32:
					v.SetInt(v.Int() + 1)
				case reflect.Float64:
					v.SetFloat(v.Float() + 1)
				default:
					t.Fatalf("%s is a %s: teach the test to change it", field.Name, v.Kind())
				}
				old := rendered(pageKey{lang, before}) // kept, as a crowd's first fan leaves it
				got, want := rendered(pageKey{lang, after}), render(pageKey{lang, after})
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: after %s changed, the page served is not the page the settings make", lang, field.Name)
				}
				if _, ok := unseen[field.Name]; !ok && reflect.DeepEqual(old, want) {
					t.Errorf("%s: changing %s leaves the page as it was: show it, or list it in unseen with why",
						lang, field.Name)
				}
			}
		})
	}
}

// TestRenderedKeepsSettingsApart: two different page settings are two pages, however their fields would read
// joined into one string (the key was once lang, language and message joined by NULs, under which these two
// shared a key and the second show got the first one's page).
func TestRenderedKeepsSettingsApart(t *testing.T) {
	t.Parallel()
	a := pageKey{"en", admission.Page{Language: "en", Message: "x\x00TestRenderedKeepsSettingsApart"}}
	b := pageKey{"en", admission.Page{Language: "en\x00x", Message: "TestRenderedKeepsSettingsApart"}}
	rendered(a)
	if got, want := rendered(b), render(b); !reflect.DeepEqual(got, want) {
		t.Errorf("the page for %+v is another settings' page", b.page)
	}
}
