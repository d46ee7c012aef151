package notify

import (
	"testing"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/waitroom"
)

// The waiting room writes a wave's events and booking mails them: the two services must spell the types alike,
// and every kind must have its words in every language the messages are written in.
func TestWaveEventsAreMailed(t *testing.T) {
	if booking.EventInvited != waitroom.EventInvited || booking.EventNotInvited != waitroom.EventPassedOver {
		t.Fatalf("booking mails %q and %q, the waiting room writes %q and %q", booking.EventInvited,
			booking.EventNotInvited, waitroom.EventInvited, waitroom.EventPassedOver)
	}
	f, err := New(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		for lang := range f.text {
			for _, name := range []string{kind + ".subject", kind + ".text"} {
				if f.text[lang].Lookup(name) == nil {
					t.Errorf("%s: no template %s", lang, name)
				}
			}
			if f.html[lang].Lookup(kind+".html") == nil {
				t.Errorf("%s: no template %s.html", lang, kind)
			}
		}
	}
}
