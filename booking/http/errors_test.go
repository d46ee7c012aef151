package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/store"
)

// TestConflictBody: the hand-written 409 body says what the generic problem rendering would.
func TestConflictBody(t *testing.T) {
	t.Parallel()
	for _, ce := range []*booking.ConflictError{
		{Unavailable: []string{"A1"}, Alternatives: []string{"A2", "A3"}},
		{Unavailable: []string{"q\"uo\\te", "ctl\x01\n"}, Alternatives: []string{}},
		{Unavailable: []string{"ü"}, Alternatives: nil},
	} {
		var got, want map[string]any
		if err := json.Unmarshal(appendConflict(nil, ce), &got); err != nil {
			t.Fatalf("%s: %v", appendConflict(nil, ce), err)
		}
		p := problem.New(409, problem.SeatsUnavailable, "some of the seats are held or sold").
			With("unavailable", nonNil(ce.Unavailable)).With("alternatives", nonNil(ce.Alternatives))
		b, _ := json.Marshal(p)
		_ = json.Unmarshal(b, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestCodes: every kind of error booking's domain returns, and the HTTP layer's own, maps to its status and
// problem type, also when wrapped.
func TestCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range domainCodes {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ok := codes.Match(fmt.Errorf("context: %w", tc.err))
			if !ok {
				t.Fatalf("%v has no row in the table", tc.err)
			}
			if m.Status != tc.status || m.Slug != tc.slug {
				t.Fatalf("got %d %s, want %d %s", m.Status, m.Slug, tc.status, tc.slug)
			}
		})
	}
	for _, tc := range []struct {
		name string
		err  error
		slug string
	}{
		{"conflict error", &booking.ConflictError{Unavailable: []string{"A1"}}, problem.SeatsUnavailable},
		{"queue error", &booking.QueueError{ShowID: "s", Cause: errors.New("no token")}, problem.QueueRequired},
		{"invalid", booking.Invalid("seat %q", "Z9"), problem.BadRequest},
		{"unprocessable", booking.Unprocessable("too late"), problem.Validation},
		{"store down inside a domain error", fmt.Errorf("%w: %w", booking.ErrNotFound, store.ErrUnavailable),
			problem.StoreUnavailable},
		{"csrf", session.ErrCSRF, problem.CSRF},
		{"shutting down", errShuttingDown, problem.ServiceUnavailable},
		{"busy", errBusy, problem.ServiceUnavailable},
		{"guests off", errGuestsOff, problem.NotFound},
	} {
		m, ok := codes.Match(tc.err)
		if !ok || m.Slug != tc.slug {
			t.Errorf("%s: got %q (found %v), want %q", tc.name, m.Slug, ok, tc.slug)
		}
	}
}

// domainCodes is what each of booking's error kinds answers.
var domainCodes = []struct {
	name   string
	err    error
	status int
	slug   string
}{
	{"ErrNotFound", booking.ErrNotFound, 404, problem.NotFound},
	{"ErrInvalid", booking.ErrInvalid, 400, problem.BadRequest},
	{"ErrValidation", booking.ErrValidation, 422, problem.Validation},
	{"ErrSeatsUnavailable", booking.ErrSeatsUnavailable, 409, problem.SeatsUnavailable},
	{"ErrSaleNotOpen", booking.ErrSaleNotOpen, 422, "sale-not-open"},
	{"ErrSaleClosed", booking.ErrSaleClosed, 409, "sale-closed"},
	{"ErrTooManySeats", booking.ErrTooManySeats, 422, problem.Validation},
	{"ErrNotHeld", booking.ErrNotHeld, 409, problem.Conflict},
	{"ErrHoldExpired", booking.ErrHoldExpired, 410, problem.Gone},
	{"ErrIdempotency", booking.ErrIdempotency, 422, "idempotency-key-reused"},
	{"ErrInProgress", booking.ErrInProgress, 409, "in-progress"},
	{"ErrUnauthorized", booking.ErrUnauthorized, 401, problem.Unauthorized},
	{"ErrForbidden", booking.ErrForbidden, 403, problem.Forbidden},
	{"ErrQueueRequired", booking.ErrQueueRequired, 403, problem.QueueRequired},
	{"ErrStale", booking.ErrStale, 409, problem.SeatsUnavailable},
	{"ErrPaymentDeclined", booking.ErrPaymentDeclined, 402, problem.PaymentDeclined},
	{"ErrPaymentFailed", booking.ErrPaymentFailed, 503, problem.ServiceUnavailable},
	{"ErrNotConfirmed", booking.ErrNotConfirmed, 409, problem.Conflict},
	{"ErrRefundWindow", booking.ErrRefundWindow, 409, "refund-window-closed"},
	{"ErrTicketInvalid", booking.ErrTicketInvalid, 400, "ticket-invalid"},
	{"ErrAlreadyCheckedIn", booking.ErrAlreadyCheckedIn, 409, "already-checked-in"},
	{"ErrTicketVoid", booking.ErrTicketVoid, 409, "ticket-void"},
	{"ErrWebhook", booking.ErrWebhook, 400, problem.BadRequest},
	{"ErrSeatNotPaid", booking.ErrSeatNotPaid, 409, "seat-not-paid"},
	{"ErrTransferred", booking.ErrTransferred, 409, "ticket-transferred"},
	{"ErrTransferClosed", booking.ErrTransferClosed, 409, "transfer-closed"},
	{"ErrResaleClosed", booking.ErrResaleClosed, 409, "resale-closed"},
	{"ErrPriceAboveCap", booking.ErrPriceAboveCap, 422, "price-above-cap"},
	{"ErrTicketListed", booking.ErrTicketListed, 409, "ticket-listed"},
	{"ErrResold", booking.ErrResold, 409, "ticket-resold"},
	{"ErrCodeExpired", booking.ErrCodeExpired, 409, "code-expired"},
	{"ErrRotatingCodes", booking.ErrRotatingCodes, 409, "rotating-codes"},
	{"ErrStaticCodes", booking.ErrStaticCodes, 409, "static-codes"},
	{"ErrCodeInvalid", booking.ErrCodeInvalid, 422, "validation"},
	{"ErrNotSoldOut", booking.ErrNotSoldOut, 409, "not-sold-out"},
	{"ErrTooManyStreams", booking.ErrTooManyStreams, 429, problem.RateLimited},
}

// TestCodesCoverDomain: every exported Err variable of the booking package is in TestCodes, so a new kind of
// domain error cannot reach a client as a 500 unnoticed.
func TestCodesCoverDomain(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "..", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, tc := range domainCodes {
		tested[tc.name] = true
	}
	var found int
	for _, f := range pkgs["booking"].Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if !strings.HasPrefix(n.Name, "Err") {
						continue
					}
					found++
					if !tested[n.Name] {
						t.Errorf("booking.%s is not in the error table's test (domainCodes)", n.Name)
					}
				}
			}
		}
	}
	if found != len(domainCodes) {
		t.Errorf("booking declares %d Err variables, domainCodes lists %d", found, len(domainCodes))
	}
}
