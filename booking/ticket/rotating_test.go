package ticket_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/tickettest"
	"github.com/flashseat/flashseat/shared/token"
)

var (
	realTicket = "tk_" + strings.Repeat("0f", 16)
	realShow   = "sh_" + strings.Repeat("a7", 16)
	t0         = time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
)

func newHolder(t testing.TB, s *ticket.Signer) ticket.Holder {
	t.Helper()
	h, err := s.Certify(realTicket, realShow, "J20", t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func kitOf(s *ticket.Signer, tickets map[string]bool) *ticket.Kit {
	return &ticket.Kit{ShowID: realShow, Keys: token.NewStaticKeys(s.Public()), Tickets: tickets}
}

func TestRotatingRoundTrip(t *testing.T) {
	s, _ := newSigner(t)
	h := newHolder(t, s)
	code := h.Stamp(t0)
	if n := len(code); n > ticket.MaxCodeLen || n < 250 || n > 330 {
		t.Fatalf("code is %d characters, want about 310", n)
	}
	if !ticket.IsRotating(code) || strings.Count(code, ".") != 3 {
		t.Fatalf("code %q is not of the rotating shape", code)
	}
	got, err := kitOf(s, map[string]bool{realTicket: true}).Verify(code, t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := ticket.Claims{TicketID: realTicket, ShowID: realShow, SeatID: "J20", KeyID: s.Public().ID}
	if got.Claims() != want || !got.Stamped.Equal(t0) || !got.NotAfter.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("Verify = %+v, want %+v stamped %v", got, want, t0)
	}
	// The holder key is derived: the same ticket always has the same, another ticket another.
	if again := newHolder(t, s); !again.Key.Equal(h.Key) {
		t.Fatal("two certificates of one ticket have two holder keys")
	}
	other, _ := s.Certify("tk_"+strings.Repeat("1e", 16), realShow, "J21", t0.Add(time.Hour))
	if other.Key.Equal(h.Key) {
		t.Fatal("two tickets share a holder key")
	}
	if p, err := ticket.Peek(code); err != nil || p.TicketID != realTicket || p.ShowID != realShow {
		t.Fatalf("Peek = %+v, %v", p, err)
	}
}

// TestRotatingRefusals: every rule of docs/TICKETS.md's check, one case each, with its own error.
func TestRotatingRefusals(t *testing.T) {
	s, v1 := newSigner(t)
	h := newHolder(t, s)
	kit := kitOf(s, map[string]bool{realTicket: true})
	code := h.Stamp(t0)
	parts := strings.Split(code, ".")
	static, _ := s.Sign(realTicket, realShow, "J20")
	if _, err := v1.Verify(code); !errors.Is(err, ticket.ErrMalformed) {
		t.Fatalf("the static reader accepted a rotating code: %v", err)
	}

	other, _ := newSigner(t)
	foreign := newHolder(t, other)
	otherShow, _ := s.Certify(realTicket, "sh_"+strings.Repeat("b8", 16), "J20", t0.Add(time.Hour))
	_, thief, _ := ed25519.GenerateKey(nil)
	restamped := ticket.MakeCode(h.Cert, h.CertSig, thief, t0) // a valid certificate, stamped by another key
	short, _ := s.Certify(realTicket, realShow, "J20", t0.Add(-time.Second))

	tests := []struct {
		name    string
		code    string
		now     time.Time
		wantErr error
	}{
		{"screenshot older than max age plus skew", code, t0.Add(36 * time.Second), ticket.ErrExpired},
		{"stamp from the future", h.Stamp(t0.Add(6 * time.Second)), t0, ticket.ErrFuture},
		{"another show's code", otherShow.Stamp(t0), t0, ticket.ErrWrongShow},
		{"ticket not in the kit", func() string {
			x, _ := s.Certify("tk_"+strings.Repeat("2d", 16), realShow, "J22", t0.Add(time.Hour))
			return x.Stamp(t0)
		}(), t0, ticket.ErrNotInKit},
		{"certificate past notAfter", short.Stamp(t0), t0, ticket.ErrCertExpired},
		{"unknown platform key", foreign.Stamp(t0), t0, ticket.ErrUnknownKey},
		{"stamp signed by another key", restamped, t0, ticket.ErrBadSignature},
		{"stamp changed", strings.Join([]string{parts[0], parts[1], base64.RawURLEncoding.EncodeToString(
			[]byte{0, 0, 0, 0, 0x70, 0, 0, 0}), parts[3]}, "."), t0, ticket.ErrBadSignature},
		{"certificate signature of another certificate", strings.Join([]string{otherShow.Stamp(t0)[:strings.Index(otherShow.Stamp(t0), ".")],
			parts[1], parts[2], parts[3]}, "."), t0, ticket.ErrBadSignature},
		{"static code", static, t0, ticket.ErrStatic},
		{"three parts", strings.Join(parts[:3], "."), t0, ticket.ErrMalformed},
		{"five parts", code + ".AA", t0, ticket.ErrMalformed},
		{"padded", parts[0] + "=." + strings.Join(parts[1:], "."), t0, ticket.ErrMalformed},
		{"short stamp", strings.Join([]string{parts[0], parts[1], "AAAA", parts[3]}, "."), t0, ticket.ErrMalformed},
		{"trailing certificate byte", func() string {
			raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
			return strings.Join(append([]string{base64.RawURLEncoding.EncodeToString(append(raw, 0))}, parts[1:]...), ".")
		}(), t0, ticket.ErrMalformed},
		{"version 1 certificate", func() string {
			raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
			raw[0] = 1
			return strings.Join(append([]string{base64.RawURLEncoding.EncodeToString(raw)}, parts[1:]...), ".")
		}(), t0, ticket.ErrMalformed},
		{"huge", strings.Repeat("A", 600) + "." + strings.Join(parts[1:], "."), t0, ticket.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kit.Verify(tt.code, tt.now)
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, ticket.ErrInvalid) {
				t.Fatalf("Verify = %v, want %v (and ErrInvalid)", err, tt.wantErr)
			}
		})
	}
	// At the edges of the window: 5 s ahead and 35 s behind are still accepted.
	for _, now := range []time.Time{t0.Add(-5 * time.Second), t0.Add(35 * time.Second)} {
		if _, err := kit.Verify(code, now); err != nil {
			t.Fatalf("stamp %v checked at %v: %v", t0, now, err)
		}
	}
	// The server's kit (no ticket list) leaves that question to the ledger.
	if _, err := (&ticket.Kit{ShowID: realShow, Keys: kit.Keys}).Verify(code, t0); err != nil {
		t.Fatal(err)
	}
}

// TestKitCannotMint: a door holds the platform's public key and a holder's code it has seen; with those alone,
// taken as seeds or keys every way they fit, no new code verifies.
func TestKitCannotMint(t *testing.T) {
	s, _ := newSigner(t)
	h := newHolder(t, s)
	kit := kitOf(s, map[string]bool{realTicket: true})
	seen := h.Stamp(t0)
	parts := strings.Split(seen, ".")
	material := [][]byte{s.Public().Key, []byte(s.Public().ID), []byte(realTicket), []byte(realShow)}
	for _, p := range parts {
		raw, _ := base64.RawURLEncoding.DecodeString(p)
		material = append(material, raw)
	}
	now := t0.Add(time.Minute)
	for _, m := range material {
		for _, key := range tickettest.KeysFrom(m) {
			// As the holder key: restamp the certificate seen.
			if _, err := kit.Verify(ticket.MakeCode(h.Cert, h.CertSig, key, now), now); err == nil {
				t.Fatalf("a key made of public material %x stamped a valid code", m)
			}
			// As the platform key: certify a holder key of one's own.
			forger, err := ticket.NewSigner(token.Key{ID: s.Public().ID, Private: key})
			if err != nil {
				t.Fatal(err)
			}
			fh, _ := forger.Certify(realTicket, realShow, "J20", now.Add(time.Hour))
			if _, err := kit.Verify(fh.Stamp(now), now); err == nil {
				t.Fatalf("a key made of public material %x certified a valid code", m)
			}
		}
	}
}

// FuzzKitVerify: no input makes Verify panic, and what it accepts has a valid certificate of the kit's show.
func FuzzKitVerify(f *testing.F) {
	s, _ := newSigner(f)
	h := newHolder(f, s)
	code := h.Stamp(t0)
	for _, seed := range []string{code, "", "...", "a.b.c.d", code + "x", strings.ToUpper(code)} {
		f.Add(seed)
	}
	kit := kitOf(s, nil)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := kit.Verify(in, t0)
		if err != nil {
			if !errors.Is(err, ticket.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if r.ShowID != realShow || r.KeyID != s.Public().ID {
			t.Fatalf("accepted %q of %+v", in, r)
		}
	})
}
