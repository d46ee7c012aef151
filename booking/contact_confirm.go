package booking

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"time"
)

// A contact's e-mail is confirmed by a six-digit code mailed to it when the fan gives it: a guest who registers for
// a verified-fan sale (waitroom/registration.go) must be reachable there, so one identity costs an inbox too. Only
// the code's hash is kept; it lasts CodeTTL and allows CodeTries wrong guesses, after which the fan asks again.

// Limits of a contact's code.
const (
	CodeTTL   = 15 * time.Minute
	CodeTries = 5
)

// ErrCodeInvalid: the code is wrong, expired, or tried too often; a validation error of the field code.
var ErrCodeInvalid = fmt.Errorf("%w: code is wrong or expired: ask for a new one by giving the e-mail again",
	ErrValidation)

// CodeMailer mails a contact their code (booking/notify).
type CodeMailer interface {
	MailCode(ctx context.Context, c Contact, code string) error
}

// CodeStore keeps contacts' codes; booking/postgres implements it.
type CodeStore interface {
	// SetContactCode records the hash of user's new code, valid until expires (earlier tries forgotten).
	SetContactCode(ctx context.Context, userID string, hash []byte, expires time.Time) error
	// ConfirmContact confirms user's contact if hash is their live code's, counting a try; false when it is not.
	ConfirmContact(ctx context.Context, userID string, hash []byte, now time.Time, tries int) (bool, error)
}

// codeHash is what the record keeps of a code: bound to the user, so the same digits are another user's hash.
func codeHash(userID, code string) []byte {
	h := sha256.Sum256([]byte("flashseat contact code v1\x00" + userID + "\x00" + code))
	return h[:]
}

// newCode is six random digits.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// sendCode makes, records and mails ct a fresh code.
func (c *Contacts) sendCode(ctx context.Context, ct Contact) error {
	if c.codes == nil || c.mailer == nil {
		return nil // no mail configured: contacts stay unconfirmed
	}
	code, err := newCode()
	if err != nil {
		return err
	}
	if err := c.codes.SetContactCode(ctx, ct.UserID, codeHash(ct.UserID, code), time.Now().Add(CodeTTL)); err != nil {
		return err
	}
	return c.mailer.MailCode(ctx, ct, code)
}

// Confirm confirms the fan's contact with the code mailed to it; ErrCodeInvalid when it does not match.
func (c *Contacts) Confirm(ctx context.Context, userID, code string) (Contact, error) {
	if len(code) != 6 || c.codes == nil {
		return Contact{}, ErrCodeInvalid
	}
	ok, err := c.codes.ConfirmContact(ctx, userID, codeHash(userID, code), time.Now(), CodeTries)
	if err != nil {
		return Contact{}, err
	}
	if !ok {
		return Contact{}, ErrCodeInvalid
	}
	return c.store.Contact(ctx, userID)
}
