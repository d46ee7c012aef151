package ticket_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/shared/token"
)

func newSigner(t testing.TB) (*ticket.Signer, *ticket.Verifier) {
	t.Helper()
	key, _, err := ticket.LoadKey("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ticket.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, ticket.NewVerifier(token.NewStaticKeys(s.Public()))
}

func TestSignVerify(t *testing.T) {
	s, v := newSigner(t)
	code, err := s.Sign("tk_01HZX", "sh_42", "A12")
	if err != nil {
		t.Fatal(err)
	}
	if len(code) > 160 {
		t.Fatalf("code is %d characters, want compact (<=160): %s", len(code), code)
	}
	got, err := v.Verify(code)
	if err != nil {
		t.Fatal(err)
	}
	want := ticket.Claims{TicketID: "tk_01HZX", ShowID: "sh_42", SeatID: "A12", KeyID: s.Public().ID}
	if got != want {
		t.Fatalf("claims = %+v, want %+v", got, want)
	}

	other, _ := newSigner(t)
	forged, _ := other.Sign("tk_01HZX", "sh_42", "A12")
	payload, sig, _ := strings.Cut(code, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1 // seat A12 -> A13
	sameKidOtherKey := func() string {
		// A forger who knows the key id but not the key.
		k, _, _ := ticket.LoadKey("")
		k.ID = s.Public().ID
		f, _ := ticket.NewSigner(k)
		c, _ := f.Sign("tk_01HZX", "sh_42", "A12")
		return c
	}()

	tests := []struct {
		name    string
		code    string
		wantErr error
	}{
		{"unknown key id", forged, ticket.ErrUnknownKey},
		{"known key id, other key", sameKidOtherKey, ticket.ErrBadSignature},
		{"tampered seat", base64.RawURLEncoding.EncodeToString(flipped) + "." + sig, ticket.ErrBadSignature},
		{"signature of another ticket", strings.Split(forged, ".")[0] + "." + sig, ticket.ErrUnknownKey},
		{"empty", "", ticket.ErrMalformed},
		{"no dot", payload, ticket.ErrMalformed},
		{"three parts", code + ".x", ticket.ErrMalformed},
		{"short signature", payload + "." + sig[:20], ticket.ErrMalformed},
		{"not base64", "!!!." + sig, ticket.ErrMalformed},
		{"padded base64", payload + "=." + sig, ticket.ErrMalformed},
		{"trailing payload bytes", base64.RawURLEncoding.EncodeToString(append(raw, 0)) + "." + sig, ticket.ErrMalformed},
		{"wrong version", base64.RawURLEncoding.EncodeToString(append([]byte{2}, raw[1:]...)) + "." + sig, ticket.ErrMalformed},
		{"truncated payload", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-3]) + "." + sig, ticket.ErrMalformed},
		{"huge", strings.Repeat("A", 10_000) + "." + sig, ticket.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(tt.code)
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, ticket.ErrInvalid) {
				t.Fatalf("Verify = %v, want %v (and ErrInvalid)", err, tt.wantErr)
			}
		})
	}
}

// TestPackedIDs: the platform's own ids (prefix_32hex) are packed, which keeps a real code near 150 characters,
// and sent any other way they are refused, so each ticket has one code.
func TestPackedIDs(t *testing.T) {
	s, v := newSigner(t)
	ticketID, showID := "tk_"+strings.Repeat("0f", 16), "sh_"+strings.Repeat("a7", 16)
	code, err := s.Sign(ticketID, showID, "J20")
	if err != nil {
		t.Fatal(err)
	}
	if len(code) > 160 {
		t.Fatalf("code of real ids is %d characters, want at most 160", len(code))
	}
	c, err := v.Verify(code)
	if err != nil || c.TicketID != ticketID || c.ShowID != showID || c.SeatID != "J20" {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	// Ids that look almost like ours travel as they are and come back unchanged.
	for _, id := range []string{"tk_" + strings.Repeat("0F", 16), "TK_" + strings.Repeat("0f", 16), "tk_" + strings.Repeat("0f", 15), "toolongprefix_" + strings.Repeat("0f", 16)} {
		code, err := s.Sign(id, showID, "A1")
		if err != nil {
			t.Fatal(err)
		}
		if c, err := v.Verify(code); err != nil || c.TicketID != id {
			t.Fatalf("id %q: Verify = %+v, %v", id, c, err)
		}
	}
	// A packable id sent unpacked is malformed, whatever the signature.
	raw := []byte{1, 8}
	raw = append(raw, s.Public().ID...)
	raw = append(raw, byte(len(ticketID)))
	raw = append(raw, ticketID...)
	raw = append(raw, 2, 'S', '1', 2, 'A', '1')
	forged := base64.RawURLEncoding.EncodeToString(raw) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 64))
	if _, err := v.Verify(forged); !errors.Is(err, ticket.ErrMalformed) {
		t.Fatalf("unpacked form of a packable id: %v, want ErrMalformed", err)
	}
}

func TestKeyRotation(t *testing.T) {
	old, _ := newSigner(t)
	cur, _ := newSigner(t)
	v := ticket.NewVerifier(token.NewStaticKeys(cur.Public(), old.Public()))
	for _, s := range []*ticket.Signer{old, cur} {
		code, _ := s.Sign("t1", "s1", "B2")
		if c, err := v.Verify(code); err != nil || c.KeyID != s.Public().ID {
			t.Fatalf("code of key %s: %+v, %v", s.Public().ID, c, err)
		}
	}
}

func TestLoadKey(t *testing.T) {
	seed := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	tests := []struct {
		name          string
		seed          string
		wantGenerated bool
		wantErr       bool
	}{
		{"generated for dev", "", true, false},
		{"url seed", seed, false, false},
		{"std padded seed", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)), false, false},
		{"short seed", base64.RawURLEncoding.EncodeToString([]byte("short")), false, true},
		{"not base64", "***", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, gen, err := ticket.LoadKey(tt.seed)
			if (err != nil) != tt.wantErr || gen != tt.wantGenerated {
				t.Fatalf("LoadKey = %v, generated %v; want err %v, generated %v", err, gen, tt.wantErr, tt.wantGenerated)
			}
			if err == nil && len(k.ID) != 8 {
				t.Fatalf("key id %q, want 8 characters", k.ID)
			}
		})
	}
	a, _, _ := ticket.LoadKey(seed)
	b, _, _ := ticket.LoadKey(seed)
	if a.ID != b.ID || !a.Private.Equal(b.Private) {
		t.Fatal("the same seed gave two keys")
	}
}

func TestSignRejectsBadIDs(t *testing.T) {
	s, _ := newSigner(t)
	for _, ids := range [][3]string{{"", "s", "A1"}, {"t", "", "A1"}, {"t", "s", strings.Repeat("x", 65)}} {
		if _, err := s.Sign(ids[0], ids[1], ids[2]); err == nil {
			t.Fatalf("Sign%q succeeded", ids)
		}
	}
	if _, err := ticket.NewSigner(token.Key{ID: "x"}); err == nil {
		t.Fatal("NewSigner accepted a key without a private half")
	}
}

// FuzzVerify: no input makes Verify panic, and whatever it accepts round-trips to the same claims.
func FuzzVerify(f *testing.F) {
	s, v := newSigner(f)
	code, _ := s.Sign("tk_1", "sh_1", "A1")
	real, _ := s.Sign("tk_"+strings.Repeat("0f", 16), "sh_"+strings.Repeat("a7", 16), "J20")
	for _, seed := range []string{code, real, "", ".", "a.b", code + "x", strings.ToUpper(code)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := v.Verify(in)
		if err != nil {
			if !errors.Is(err, ticket.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		again, err := s.Sign(c.TicketID, c.ShowID, c.SeatID)
		if err != nil || again != in {
			t.Fatalf("accepted %q but re-signing gives %q, %v", in, again, err)
		}
	})
}
