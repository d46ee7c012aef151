package booking

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/mail"
	"time"

	"github.com/flashseat/flashseat/shared/shard"
)

// TransferStatus is where a ticket transfer stands.
type TransferStatus string

// A transfer is PENDING until the new holder claims it (CLAIMED) or the sender takes it back (CANCELLED). A link
// past its expiry is simply refused.
const (
	TransferPending   TransferStatus = "PENDING"
	TransferClaimed   TransferStatus = "CLAIMED"
	TransferCancelled TransferStatus = "CANCELLED"
)

// Transfer is one ticket sent from one fan to another: the audit both see.
type Transfer struct {
	ID          string
	ShowID      string
	TicketID    string
	BookingID   string
	SeatID      string
	FromUser    string
	ToEmail     string // when sent by e-mail
	ToUser      string // once claimed
	NewTicketID string // once claimed: the reissued ticket
	Status      TransferStatus
	ExpiresAt   time.Time
	CreatedAt   time.Time
	EndedAt     time.Time // claimed or cancelled
	// MailLink is the claim link the recipient is e-mailed (with ToEmail only): kept by the store until the mail
	// is sent or the transfer ends, and never read back with the transfer.
	MailLink string
}

// TransferPolicy is the operator's word on a show's transfers: allowed at all, and until CutoffHours before the
// show (nil: until it starts).
type TransferPolicy struct {
	Enabled     bool
	CutoffHours *float64
}

// Until is when transfers of a show starting at startsAt close.
func (p TransferPolicy) Until(startsAt time.Time) time.Time {
	if p.CutoffHours == nil {
		return startsAt
	}
	return startsAt.Add(-time.Duration(*p.CutoffHours * float64(time.Hour)))
}

// transferLinkTTL is how long a claim link lasts at most (less when the show's cut-off comes first).
const transferLinkTTL = 7 * 24 * time.Hour

// TransferStore keeps transfers. Its claim is one transaction: the booking row, then the old ticket, are locked
// (the order a refund takes), the old ticket must still be VALID and the sender's, and it becomes TRANSFERRED
// while the new one is written VALID under the claimer: of a claim and a refund or a check-in of the same
// ticket, exactly one wins.
type TransferStore interface {
	// CreateTransfer records a PENDING transfer of a VALID ticket of t.FromUser, replacing an earlier open one of
	// the same ticket: ErrTicketVoid, ErrAlreadyCheckedIn, ErrTransferred or ErrNotFound otherwise.
	CreateTransfer(ctx context.Context, t Transfer, secretHash string) (Transfer, error)
	// ClaimTransfer reissues the transfer's ticket to toUser as newTicket, if secretHash is the link's and it is
	// PENDING and not expired at now (ErrTransferClosed otherwise; ErrNotFound for a wrong secret).
	ClaimTransfer(ctx context.Context, id, secretHash, toUser string, newTicket Ticket, now time.Time) (Transfer, error)
	// CancelTransfer takes back the sender's PENDING transfer.
	CancelTransfer(ctx context.Context, id, fromUser string) (Transfer, error)
	// TransferBySecret reads the transfer whose link carries the secret hashed as secretHash (ErrNotFound when
	// the transfer is unknown or the secret wrong).
	TransferBySecret(ctx context.Context, id, secretHash string) (Transfer, error)
	// Transfers lists the transfers the user sent or received, newest first.
	Transfers(ctx context.Context, userID string) ([]Transfer, error)
}

// TransferRequest sends a ticket; ToEmail is optional (the link is mailed there too).
type TransferRequest struct {
	TicketID string
	UserID   string
	ToEmail  string
	// SiteURL is the origin the claim link points at (https://tickets.example), as the fan reached the site.
	SiteURL string
}

// ClaimURL is a transfer's claim link: the claim page, with the secret as its fragment, which a browser never
// sends to a server.
func ClaimURL(siteURL, transferID, secret string) string {
	return siteURL + "/transfers/" + transferID + "#" + secret
}

// SendTransfer opens a transfer of the user's ticket and returns it with the claim secret, which only the claim
// link carries (the store keeps its hash).
func (p *Checkout) SendTransfer(ctx context.Context, r TransferRequest) (Transfer, string, error) {
	if r.ToEmail != "" {
		a, err := mail.ParseAddress(r.ToEmail)
		if err != nil || a.Address != r.ToEmail || len(r.ToEmail) > 254 {
			return Transfer{}, "", Unprocessable("email is not an e-mail address")
		}
	}
	t, err := p.Ticket(ctx, r.TicketID, r.UserID)
	if err != nil {
		return Transfer{}, "", err
	}
	until, err := p.transfersOpen(ctx, t.ShowID)
	if err != nil {
		return Transfer{}, "", err
	}
	secret, hash := newTransferSecret()
	now := p.cfg.Now()
	expires := now.Add(transferLinkTTL)
	if until.Before(expires) {
		expires = until
	}
	tr := Transfer{ID: shard.ID("tr_", t.ShowID), ShowID: t.ShowID, TicketID: t.ID, BookingID: t.BookingID, SeatID: t.SeatID,
		FromUser: r.UserID, ToEmail: r.ToEmail, Status: TransferPending, CreatedAt: now,
		ExpiresAt: expires}
	if r.ToEmail != "" {
		tr.MailLink = ClaimURL(r.SiteURL, tr.ID, secret)
	}
	tr, err = p.store.CreateTransfer(ctx, tr, hash)
	if err != nil {
		return Transfer{}, "", err
	}
	return tr, secret, nil
}

// ClaimTransfer gives the transfer's ticket to the signed-in claimer: a new ticket with a new code, the old code
// refused at check-in from then on. The show's switch and cut-off are checked again at the claim.
func (p *Checkout) ClaimTransfer(ctx context.Context, id, secret, userID string) (TicketInfo, error) {
	if !ValidID(id) {
		return TicketInfo{}, fmt.Errorf("transfer: %w", ErrNotFound)
	}
	if secret == "" || len(secret) > 128 {
		return TicketInfo{}, Invalid("secret is required: it is the part of the claim link after #")
	}
	tr, err := p.store.TransferBySecret(ctx, id, hashSecret(secret))
	if err != nil {
		return TicketInfo{}, err
	}
	if tr.FromUser == userID && tr.Status == TransferPending {
		return TicketInfo{}, Unprocessable("this is your own transfer: send the link to the fan who will use the ticket")
	}
	if _, err := p.transfersOpen(ctx, tr.ShowID); err != nil {
		return TicketInfo{}, err
	}
	nt := Ticket{ID: shard.ID("tk_", tr.ShowID), SeatID: tr.SeatID, Status: TicketValid}
	if nt.Code, err = p.signer.Sign(nt.ID, tr.ShowID, tr.SeatID); err != nil {
		return TicketInfo{}, err
	}
	tr, err = p.store.ClaimTransfer(ctx, id, hashSecret(secret), userID, nt, p.cfg.Now())
	if err != nil {
		return TicketInfo{}, err
	}
	return p.Ticket(ctx, tr.NewTicketID, userID)
}

// CancelTransfer takes back a transfer not claimed yet; its link is refused from then on.
func (p *Checkout) CancelTransfer(ctx context.Context, id, userID string) (Transfer, error) {
	if !ValidID(id) {
		return Transfer{}, fmt.Errorf("transfer: %w", ErrNotFound)
	}
	return p.store.CancelTransfer(ctx, id, userID)
}

// Transfers lists the transfers the user sent or received, newest first.
func (p *Checkout) Transfers(ctx context.Context, userID string) ([]Transfer, error) {
	return p.store.Transfers(ctx, userID)
}

// transfersOpen returns until when the show's tickets may change hands, or ErrTransferClosed.
func (p *Checkout) transfersOpen(ctx context.Context, showID string) (time.Time, error) {
	show, err := p.holds.catalog.Show(ctx, showID)
	if err != nil {
		return time.Time{}, err
	}
	tp, err := p.TicketPolicy(ctx, showID)
	if err != nil {
		return time.Time{}, err
	}
	if !tp.Transfer.Enabled {
		return time.Time{}, fmt.Errorf("%w: the organiser does not allow transfers for this show", ErrTransferClosed)
	}
	until := tp.Transfer.Until(show.StartsAt)
	if !p.cfg.Now().Before(until) {
		return time.Time{}, fmt.Errorf("%w: transfers closed at %s", ErrTransferClosed, until.UTC().Format(time.RFC3339))
	}
	return until, nil
}

// newTransferSecret returns a claim secret and the hash the store keeps.
func newTransferSecret() (secret, hash string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return secret, hashSecret(secret)
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
