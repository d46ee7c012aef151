// Package notify tells fans what happened to their bookings: booking confirmed (with the tickets' QR codes as
// inline images and their PDF attached; for a show with rotating codes neither, but a link to the booking page
// that shows the live code), a waitlist offer, a refund, and a ticket sent to them by another fan
// (its claim link). It is a consumer group ("notify") of the lifecycle event stream;
// each message is rendered from templates in the fan's page language and sent through every configured Notifier:
// SMTP (net/smtp) to the e-mail the fan gave, and a webhook (a signed JSON POST to a gateway of the operator's,
// e.g. for SMS or push).
package notify

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/pdf"
	"github.com/flashseat/flashseat/booking/ticket/qr"
)

// Message is one notification to one fan.
type Message struct {
	UserID   string
	To       string // the fan's e-mail; empty when they gave none
	Language string // the language it is written in
	Kind     string // confirmed, offer, refund, transfer
	EventID  string // the event's dedupe id, for receivers that dedupe
	Subject  string
	Text     string
	HTML     string
	Inline   []Attachment // images the HTML refers to as cid:<ContentID>
	Attached []Attachment // files to save (the tickets' PDF)
}

// Attachment is a file sent with a message.
type Attachment struct {
	Name        string
	ContentType string
	ContentID   string
	Data        []byte
}

// Notifier sends messages. SMTP and Webhook implement it.
type Notifier interface {
	// Notify sends m; ErrNoAddress when m lacks what this notifier needs (an SMTP notifier and no e-mail).
	Notify(ctx context.Context, m Message) error
}

// ErrNoAddress: the fan cannot be reached by this notifier.
var ErrNoAddress = errors.New("notify: no address for this fan")

// Store is what Fans reads and records; booking/postgres implements it.
type Store interface {
	Contact(ctx context.Context, userID string) (booking.Contact, error)
	BookingLanguage(ctx context.Context, bookingID string) (string, error)
	Tickets(ctx context.Context, bookingID string) ([]booking.Ticket, error)
	// BeginNotification claims an event's notification; false when it was sent already.
	BeginNotification(ctx context.Context, eventID, userID, kind string) (bool, error)
	FinishNotification(ctx context.Context, eventID string, sendErr error) error
	// TransferMailLink is the claim link to mail for a transfer ("" once mailed, or once the transfer ended);
	// ForgetTransferMail drops it once mailed. The event itself never carries the link's secret.
	TransferMailLink(ctx context.Context, transferID string) (string, error)
	ForgetTransferMail(ctx context.Context, transferID string) error
	// TicketPolicy is the show's own ticket policy (booking.PolicyStore): its Codes say whether the tickets carry
	// a static code to mail or a rotating one that only the booking page shows.
	TicketPolicy(ctx context.Context, showID string) (p booking.TicketPolicy, ok bool, err error)
}

// Shows reads shows (booking.Service).
type Shows interface {
	Show(ctx context.Context, id string) (booking.Show, error)
}

//go:embed templates/*.tmpl
var templateFiles embed.FS

// Fans notifies fans of their bookings' events.
type Fans struct {
	store     Store
	shows     Shows
	notifiers []Notifier
	log       *slog.Logger
	text      map[string]*texttemplate.Template
	html      map[string]*htmltemplate.Template
	// OnSent is told each notification's kind and outcome (metrics); nil is fine. Set before use.
	OnSent func(kind string, err error)
	// SiteURL is the site's origin as fans reach it (https://tickets.example), for links to their booking pages.
	// Set before use.
	SiteURL string
}

// New returns Fans sending through notifiers.
func New(store Store, shows Shows, log *slog.Logger, notifiers ...Notifier) (*Fans, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fans{store: store, shows: shows, notifiers: notifiers, log: log,
		text: map[string]*texttemplate.Template{}, html: map[string]*htmltemplate.Template{}}
	funcs := map[string]any{"join": strings.Join}
	for _, lang := range booking.Languages { // a template of each; any other language falls back to English
		t, err := texttemplate.New(lang).Funcs(funcs).ParseFS(templateFiles, "templates/"+lang+".txt.tmpl")
		if err != nil {
			return nil, fmt.Errorf("notify: templates %s: %w", lang, err)
		}
		h, err := htmltemplate.New(lang).Funcs(funcs).ParseFS(templateFiles, "templates/"+lang+".html.tmpl")
		if err != nil {
			return nil, fmt.Errorf("notify: templates %s: %w", lang, err)
		}
		f.text[lang], f.html[lang] = t, h
	}
	return f, nil
}

// payload is the part of an event's data the messages use.
type payload struct {
	BookingID string   `json:"bookingId"`
	UserID    string   `json:"userId"`
	SeatIDs   []string `json:"seatIds"`
	ExpiresAt string   `json:"expiresAt"`
	Amount    int64    `json:"amount"`
	Currency  string   `json:"currency"`
	Language  string   `json:"language"`
	// A transfer's: the recipient's e-mail and the seat.
	TransferID string `json:"transferId"`
	ToEmail    string `json:"toEmail"`
	SeatID     string `json:"seatId"`
	// An invitation wave's number.
	Wave int    `json:"wave"`
	link string // the transfer's claim link, from the store
}

// view is what the templates see.
type view struct {
	BookingID string
	Show      booking.Show
	When      string // the show's start, in UTC
	Until     string // an offer's expiry, in UTC
	SeatIDs   []string
	Amount    string
	Tickets   []ticketView
	Link      string // a transfer's claim link; a rotating show's confirmation: the booking page
	Wave      int    // an invitation wave's number
	// Rotating: the show's tickets carry rotating codes, shown live on the booking page, so the confirmation
	// carries no static code, QR image or PDF (a copy of one would be refused at the door).
	Rotating bool
	Every    int // seconds between a rotating code and the next
}

type ticketView struct {
	booking.Ticket
	ContentID string
}

var kinds = map[string]string{
	booking.EventConfirmed:       "confirmed",
	booking.EventWaitlistOffered: "offer",
	booking.EventRefunded:        "refund",
	booking.EventTransferSent:    "transfer",
	booking.EventInvited:         "invited",
	booking.EventNotInvited:      "not-invited",
}

// HandleEvent is the notify consumer group's handler: it sends the event's message, once per event id however
// often the stream delivers it. A fan nobody can reach (no notifier applies) is skipped, not retried.
func (f *Fans) HandleEvent(ctx context.Context, e booking.LifecycleEvent) error {
	kind, ok := kinds[e.Type]
	if !ok {
		return nil
	}
	var p payload
	if err := json.Unmarshal(e.Data, &p); err != nil || p.UserID == "" {
		f.log.WarnContext(ctx, "notify: event without a fan", "event", e.ID, "type", e.Type)
		return nil
	}
	link := ""
	if kind == "transfer" {
		// Mailed to the address the sender gave, only while the transfer is open and not mailed yet.
		if p.ToEmail == "" {
			return nil
		}
		var err error
		if link, err = f.store.TransferMailLink(ctx, p.TransferID); err != nil || link == "" {
			return err
		}
	}
	first, err := f.store.BeginNotification(ctx, e.ID, p.UserID, kind)
	if err != nil || !first {
		return err
	}
	p.link = link
	m, err := f.compose(ctx, e, kind, p)
	if err == nil {
		err = f.send(ctx, m)
	}
	if err == nil && kind == "transfer" {
		err = f.store.ForgetTransferMail(ctx, p.TransferID)
	}
	if f.OnSent != nil {
		f.OnSent(kind, err)
	}
	if ferr := f.store.FinishNotification(context.WithoutCancel(ctx), e.ID, err); ferr != nil {
		return errors.Join(err, ferr)
	}
	if errors.Is(err, ErrNoAddress) {
		return nil // recorded as FAILED; nothing to retry
	}
	return err
}

// send sends m through every notifier that can reach the fan; ErrNoAddress when none can.
func (f *Fans) send(ctx context.Context, m Message) error {
	var errs []error
	sent := 0
	for _, n := range f.notifiers {
		err := n.Notify(ctx, m)
		switch {
		case err == nil:
			sent++
		case errors.Is(err, ErrNoAddress):
		default:
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if sent == 0 {
		return ErrNoAddress
	}
	return nil
}

// compose renders the event's message in the fan's language: the booking's page language, else the language the
// fan gave their contact in, else English.
func (f *Fans) compose(ctx context.Context, e booking.LifecycleEvent, kind string, p payload) (Message, error) {
	m := Message{UserID: p.UserID, Kind: kind, EventID: e.ID}
	contact, err := f.store.Contact(ctx, p.UserID)
	if err != nil && !errors.Is(err, booking.ErrNotFound) {
		return m, err
	}
	m.To = contact.Email
	if kind == "transfer" {
		m.To = p.ToEmail // the recipient, written in the sender's language: the one the platform knows here
	}
	lang := p.Language
	if p.BookingID != "" && lang == "" {
		if lang, err = f.store.BookingLanguage(ctx, p.BookingID); err != nil && !errors.Is(err, booking.ErrNotFound) {
			return m, err
		}
	}
	if lang == "" {
		lang = contact.Language
	}
	if _, ok := f.text[lang]; !ok {
		lang = "en"
	}
	m.Language = lang
	show, err := f.shows.Show(ctx, e.ShowID)
	if err != nil {
		return m, err
	}
	v := view{BookingID: p.BookingID, Show: show, When: show.StartsAt.UTC().Format("Mon 2 Jan 2006 15:04 MST"),
		SeatIDs: p.SeatIDs, Amount: money(p.Amount, p.Currency), Link: p.link, Wave: p.Wave}
	if p.SeatID != "" {
		v.SeatIDs = []string{p.SeatID}
	}
	if t, err := time.Parse(time.RFC3339, p.ExpiresAt); err == nil {
		v.Until = t.UTC().Format("15:04 MST, 2 Jan")
	}
	if kind == "confirmed" {
		ts, err := f.store.Tickets(ctx, p.BookingID)
		if err != nil {
			return m, err
		}
		tp, _, err := f.store.TicketPolicy(ctx, e.ShowID)
		if err != nil {
			return m, err
		}
		if tp.Codes == booking.CodesRotating {
			v.Rotating, v.Link = true, f.SiteURL+"/bookings/"+p.BookingID
			v.Every = int(ticket.RotateEvery / time.Second)
			for _, t := range ts {
				t.Code = ""
				v.Tickets = append(v.Tickets, ticketView{Ticket: t})
			}
			ts = nil
		}
		for _, t := range ts {
			png, err := qr.PNG(t.Code, 256)
			if err != nil {
				return m, err
			}
			cid := t.ID + "@flashseat"
			v.Tickets = append(v.Tickets, ticketView{Ticket: t, ContentID: cid})
			m.Inline = append(m.Inline, Attachment{Name: "ticket-" + t.SeatID + ".png", ContentType: "image/png",
				ContentID: cid, Data: png})
		}
		if len(ts) > 0 {
			doc, err := pdf.Render(show, p.BookingID, contact.Holder(), ts)
			if err != nil {
				return m, err
			}
			m.Attached = append(m.Attached, Attachment{Name: "tickets-" + p.BookingID + ".pdf",
				ContentType: pdf.ContentType, Data: doc})
		}
	}
	var sb strings.Builder
	if err := f.text[lang].ExecuteTemplate(&sb, kind+".subject", v); err != nil {
		return m, err
	}
	m.Subject = strings.TrimSpace(sb.String())
	sb.Reset()
	if err := f.text[lang].ExecuteTemplate(&sb, kind+".text", v); err != nil {
		return m, err
	}
	m.Text = sb.String()
	sb.Reset()
	if err := f.html[lang].ExecuteTemplate(&sb, kind+".html", v); err != nil {
		return m, err
	}
	m.HTML = sb.String()
	return m, nil
}

// money renders minor units with their currency: 45000 INR is "INR 450.00".
func money(minor int64, currency string) string {
	if currency == "" {
		return ""
	}
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	cents := strconv.FormatInt(minor%100+100, 10)[1:]
	return currency + " " + sign + strconv.FormatInt(minor/100, 10) + "." + cents
}
