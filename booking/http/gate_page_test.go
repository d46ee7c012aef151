package http_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/loadtest/browsertest"
	"github.com/flashseat/flashseat/shared/token"
)

// TestGateReaderAgreesWithGo: the door page's reader (assets/gate/codecheck.js, in Chromium) and booking/ticket's
// Kit give the same verdict on the same codes, good and bad, byte for byte as docs/TICKETS.md says: a fresh code,
// the age and skew limits to the second, another show's, a ticket out of the kit, a static code, a forged or
// tampered signature, an unknown key, a non-canonical base64 and a certificate with a byte too many.
func TestGateReaderAgreesWithGo(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	h := newHarness(t, newEnv(t))
	key, _, err := ticket.LoadKey("")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ticket.NewSigner(key)
	const show, tk, other = "sh_00112233445566778899aabbccddeeff", "tk_0123456789abcdef0123456789abcdef", "tk_ffeeddccbbaa99887766554433221100"
	notAfter := time.Now().Add(24 * time.Hour)
	holder, err := signer.Certify(tk, show, "B5", notAfter)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	stranger, _ := signer.Certify(other, show, "B6", notAfter)
	elsewhere, _ := signer.Certify(tk, "sh_ffeeddccbbaa99887766554433221100", "B5", notAfter)
	otherKey, _, _ := ticket.LoadKey("")
	forger, _ := ticket.NewSigner(token.Key{ID: key.ID, Private: otherKey.Private}) // the kit's key id, not its key
	forged, _ := forger.Certify(tk, show, "B5", notAfter)
	long := append(bytes.Clone(holder.Cert), 0)
	longCode := ticket.MakeCode(long, ed25519.Sign(key.Private, append([]byte("flashseat-ticket-cert-v2\x00"), long...)), holder.Key, now)
	fresh := holder.Stamp(now)
	parts := strings.Split(fresh, ".")
	tampered := strings.Join([]string{parts[0], parts[1], b64(u64(now.Unix() - 1)), parts[3]}, ".")
	last := parts[3][len(parts[3])-1]
	loose := strings.Join([]string{parts[0], parts[1], parts[2], parts[3][:len(parts[3])-1] + string(rune(last+1))}, ".")
	static, _ := signer.Sign(tk, show, "B5")

	pub := signer.Public()
	kit := func(showID string, k token.PublicKey) map[string]any {
		return map[string]any{"showId": showID, "keys": []map[string]string{{"kid": k.ID, "x": b64(k.Key)}},
			"maxAgeSeconds": 30, "skewSeconds": 5, "tickets": []map[string]any{{"ticketId": tk, "seatId": "B5", "category": "GOLD"}}}
	}
	unknown := otherKey.Public()
	unknown.ID = "other"
	cases := []struct {
		name, code string
		kit        map[string]any
		at         time.Time
		want       string // the page's reason, "" to admit
		goErr      error
	}{
		{"fresh", fresh, kit(show, pub), now, "", nil},
		{"35 s old", fresh, kit(show, pub), now.Add(35 * time.Second), "", nil},
		{"36 s old", fresh, kit(show, pub), now.Add(36 * time.Second), "code-expired", ticket.ErrExpired},
		{"5 s ahead", fresh, kit(show, pub), now.Add(-5 * time.Second), "", nil},
		{"6 s ahead", fresh, kit(show, pub), now.Add(-6 * time.Second), "code-future", ticket.ErrFuture},
		{"another show's", elsewhere.Stamp(now), kit(show, pub), now, "other-show", ticket.ErrWrongShow},
		{"not in the kit", stranger.Stamp(now), kit(show, pub), now, "not-valid", ticket.ErrNotInKit},
		{"static", static, kit(show, pub), now, "rotating-codes", ticket.ErrStatic},
		{"forged certificate", forged.Stamp(now), kit(show, pub), now, "forged", ticket.ErrBadSignature},
		{"tampered stamp", tampered, kit(show, pub), now, "forged", ticket.ErrBadSignature},
		{"unknown key", fresh, kit(show, unknown), now, "unknown-key", ticket.ErrUnknownKey},
		{"non-canonical base64", loose, kit(show, pub), now, "malformed", ticket.ErrMalformed},
		{"a byte too many", longCode, kit(show, pub), now, "malformed", ticket.ErrMalformed},
		{"three parts", strings.Join(parts[:3], "."), kit(show, pub), now, "malformed", ticket.ErrMalformed},
	}

	fan := browsertest.New(t).Fan("door", 60*time.Second)
	fan.Go(h.base + "/gate")
	fan.WaitFor("the page", `!document.getElementById("signin").hidden`)
	for _, c := range cases {
		keys := token.NewStaticKeys(token.PublicKey{ID: c.kit["keys"].([]map[string]string)[0]["kid"], Key: keyOf(t, c.kit)})
		gk := ticket.Kit{ShowID: c.kit["showId"].(string), Keys: keys, Tickets: map[string]bool{tk: true}}
		if _, err := gk.Verify(c.code, c.at); !errors.Is(err, c.goErr) && !(c.goErr == nil && err == nil) {
			t.Errorf("%s: Go's Kit says %v, want %v", c.name, err, c.goErr)
		}
		k, _ := json.Marshal(c.kit)
		got := fan.Await(`import(document.querySelector("script[type=module]").src.replace("gate.js", "codecheck.js")).then(({ Checker }) => ` +
			`new Checker(` + string(k) + `).check(` + js(c.code) + `, ` + js(c.at.Unix()) + `)).then((r) => r.ok ? "" : r.reason)`)
		if got != c.want {
			t.Errorf("%s: the page says %q, want %q", c.name, got, c.want)
		}
	}
	// A ticket this device let in already.
	k, _ := json.Marshal(kit(show, pub))
	if got := fan.Await(`import(document.querySelector("script[type=module]").src.replace("gate.js", "codecheck.js")).then(({ Checker }) => ` +
		`new Checker(` + string(k) + `).check(` + js(fresh) + `, ` + js(now.Unix()) + `, (id) => id === "` + tk + `")).then((r) => r.ok ? "" : r.reason)`); got != "already-checked-in" {
		t.Errorf("a ticket admitted already: %q", got)
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func u64(n int64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b
}

func keyOf(t *testing.T, kit map[string]any) ed25519.PublicKey {
	t.Helper()
	k, err := base64.RawURLEncoding.DecodeString(kit["keys"].([]map[string]string)[0]["x"])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// js is v as a JavaScript literal.
func js(v any) string { b, _ := json.Marshal(v); return string(b) }
