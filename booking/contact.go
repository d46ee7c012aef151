package booking

import (
	"context"
	"errors"
	"net/mail"
	"strings"
)

// Contact is how a guest fan is reached: the e-mail they gave (PUT /api/v1/me/contact) and the language of the
// page they gave it from. Guests have no account; the contact belongs to their user id.
type Contact struct {
	UserID   string
	Email    string
	Language string
	// Name is the name the fan gave to be printed on their tickets ("" none).
	Name string
	// Confirmed: the fan gave back the code mailed to Email (contact_confirm.go).
	Confirmed bool
}

// Holder is how the fan's tickets name them: their name, else their e-mail ("" for no contact).
func (c Contact) Holder() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Email
}

// ContactStore keeps contacts; booking/postgres implements it.
type ContactStore interface {
	SetContact(ctx context.Context, c Contact) error
	// Contact is the user's contact; ErrNotFound when they gave none.
	Contact(ctx context.Context, userID string) (Contact, error)
}

// ValidEmail checks an address as given by a fan: one bare address (no display name), at most 254 bytes, with a
// dot in its domain.
func ValidEmail(s string) bool {
	if s == "" || len(s) > 254 || strings.ContainsAny(s, " \t\r\n<>") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && strings.Contains(s[at+1:], ".") && !strings.HasSuffix(s, ".")
}

// Languages are the languages booking writes to fans in (booking/notify's templates), English first: the one a
// fan's browser prefers is kept with their hold, waitlist entry and contact; any other language gets English.
var Languages = []string{"en", "hi"}

// ValidLanguage accepts a primary language tag: 2 to 8 lower-case letters ("en", "hi").
func ValidLanguage(s string) bool {
	if len(s) < 2 || len(s) > 8 {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == ""
}

// Contacts sets and reads fans' contacts, and confirms their e-mails with a mailed code.
type Contacts struct {
	store  ContactStore
	codes  CodeStore  // nil: no codes kept
	mailer CodeMailer // nil: no codes mailed, contacts stay unconfirmed
}

// NewContacts returns the contacts of store; codes are kept by store when it keeps them, and mailed by mailer.
func NewContacts(store ContactStore, mailer CodeMailer) *Contacts {
	codes, _ := store.(CodeStore)
	return &Contacts{store: store, codes: codes, mailer: mailer}
}

// Set records the fan's contact after validating it.
func (c *Contacts) Set(ctx context.Context, ct Contact) (Contact, error) {
	ct.Email = strings.TrimSpace(ct.Email)
	if !ValidEmail(ct.Email) {
		return Contact{}, Unprocessable("email must be one e-mail address such as fan@example.com")
	}
	if ct.Language != "" && !ValidLanguage(ct.Language) {
		return Contact{}, Unprocessable("language must be a language tag such as en or hi")
	}
	name, err := text("name", ct.Name, false, maxName)
	if err != nil {
		return Contact{}, err
	}
	ct.Name = name
	was, err := c.store.Contact(ctx, ct.UserID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Contact{}, err
	}
	if err := c.store.SetContact(ctx, ct); err != nil {
		return Contact{}, err
	}
	if ct.Name == "" {
		ct.Name = was.Name // kept by the store
	}
	if was.Confirmed && was.Email == ct.Email {
		ct.Confirmed = true // the same address again: nothing to confirm
		return ct, nil
	}
	if err := c.sendCode(ctx, ct); err != nil {
		return Contact{}, err
	}
	return ct, nil
}

// Get is the fan's contact; ErrNotFound when they gave none.
func (c *Contacts) Get(ctx context.Context, userID string) (Contact, error) {
	return c.store.Contact(ctx, userID)
}
