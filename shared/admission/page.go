package admission

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Page is what the show's queue page says beyond the waiting room's own words: the operator's message, and the
// language the page speaks to a browser that asks for none it knows. A browser whose languages include one of
// PageLanguages gets the page in that one.
type Page struct {
	Message  string `json:"message"`
	Language string `json:"language"`
}

// PageLanguages are the languages the queue page is written in (the waiting room's page texts), the first the
// default: the languages of the fans' notifications.
var PageLanguages = []string{"en", "hi"}

// MaxPageMessage bounds the operator's message, in characters.
const MaxPageMessage = 500

// DefaultPage is an English page with no message.
func DefaultPage() Page { return Page{Language: PageLanguages[0]} }

// PageLanguage reports whether lang is one of PageLanguages.
func PageLanguage(lang string) bool {
	for _, l := range PageLanguages {
		if l == lang {
			return true
		}
	}
	return false
}

// Validate rejects a page no fan should see: an unknown language, a message too long or with control characters
// other than line breaks.
func (p Page) Validate() error {
	if !PageLanguage(p.Language) {
		return fmt.Errorf("page.language must be one of %v", PageLanguages)
	}
	if !utf8.ValidString(p.Message) || utf8.RuneCountInString(p.Message) > MaxPageMessage {
		return fmt.Errorf("page.message must be UTF-8 text of at most %d characters", MaxPageMessage)
	}
	for _, r := range p.Message {
		if unicode.IsControl(r) && r != '\n' {
			return errors.New("page.message may hold line breaks but no other control characters")
		}
	}
	return nil
}
