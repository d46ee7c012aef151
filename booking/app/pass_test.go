package app_test

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Wallet's manifest format
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// passCerts writes a CA, a WWDR-like intermediate and a pass certificate signed by it, with the pass key, to dir.
func passCerts(t *testing.T, dir string) (ca, wwdr, cert, key string) {
	t.Helper()
	mk := func(name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		path := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return c, k, path
	}
	caCert, caKey, ca := mk("ca", nil, nil, true)
	mid, midKey, wwdr := mk("wwdr", caCert, caKey, true)
	_, passKey, cert := mk("pass", mid, midKey, false)
	der, err := x509.MarshalPKCS8PrivateKey(passKey)
	if err != nil {
		t.Fatal(err)
	}
	key = filepath.Join(dir, "pass-key.pem")
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca, wwdr, cert, key
}

// TestWalletPass: a pass is a zip whose manifest lists the SHA-1 of every other file and whose signature openssl
// verifies against the test's own CA (through the intermediate the pass carries); its barcode is the ticket's
// code, which stops checking in once the seat is refunded, and a refunded ticket gets no new pass.
func TestWalletPass(t *testing.T) {
	t.Parallel()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	ca, wwdr, cert, key := passCerts(t, dir)
	st := newStack(t, "PASS_CERT_FILE", cert, "PASS_KEY_FILE", key, "PASS_WWDR_FILE", wwdr,
		"PASS_TYPE_ID", "pass.test.flashseat", "PASS_TEAM_ID", "TEAM123456")
	show := st.show()
	fan := st.guest()
	b, tickets := st.paidTickets(fan, show, "A1", "A2")
	tk := tickets["A1"]
	if page := st.do("GET", "/bookings/"+b, fan, nil); page.status != 200 || !bytes.Contains(page.body, []byte(`data-wallet="on"`)) {
		t.Fatalf("booking page: %d, want it to offer Add to Wallet", page.status)
	}
	got := st.do("GET", "/api/v1/tickets/"+tk["ticketId"].(string)+"/pass.pkpass", fan, nil)
	if got.status != 200 || got.header.Get("Content-Type") != "application/vnd.apple.pkpass" {
		t.Fatalf("pass: %d %v %s", got.status, got.header, got.body[:min(200, len(got.body))])
	}
	z, err := zip.NewReader(bytes.NewReader(got.body), int64(len(got.body)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(r)
		r.Close()
	}
	for _, name := range []string{"pass.json", "manifest.json", "signature", "icon.png", "icon@2x.png"} {
		if len(files[name]) == 0 {
			t.Fatalf("the pass lacks %s (has %d files)", name, len(files))
		}
	}
	var manifest map[string]string
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != len(files)-2 {
		t.Fatalf("manifest lists %d files, want every one of %d but itself and signature", len(manifest), len(files)-2)
	}
	for name, sum := range manifest {
		h := sha1.Sum(files[name]) //nolint:gosec // the format's
		if hex.EncodeToString(h[:]) != sum {
			t.Fatalf("manifest's SHA-1 of %s is %s, the file's is %x", name, sum, h)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(content string) error {
		return exec.Command(openssl, "smime", "-verify", "-binary", "-inform", "DER", "-in", filepath.Join(dir, "signature"),
			"-content", filepath.Join(dir, content), "-CAfile", ca, "-purpose", "any", "-out", os.DevNull).Run()
	}
	if err := verify("manifest.json"); err != nil {
		t.Fatalf("openssl smime -verify: %v", err)
	}
	if verify("pass.json") == nil {
		t.Fatal("the signature verifies over another file: the check cannot fail")
	}
	var pass struct {
		PassTypeIdentifier, TeamIdentifier, SerialNumber string
		Barcodes                                         []struct{ Format, Message string }
	}
	if err := json.Unmarshal(files["pass.json"], &pass); err != nil {
		t.Fatal(err)
	}
	if pass.PassTypeIdentifier != "pass.test.flashseat" || pass.TeamIdentifier != "TEAM123456" ||
		pass.SerialNumber != tk["ticketId"] || len(pass.Barcodes) != 1 || pass.Barcodes[0].Message != tk["code"] {
		t.Fatalf("pass.json %s", files["pass.json"])
	}

	// Refunded, the pass's code is refused at the door, and no new pass is issued.
	if r := st.do("POST", "/api/v1/bookings/"+b+"/refund", fan, map[string]any{"seatIds": []string{"A1"}}); r.status != 200 {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	st.do("POST", "/api/v1/checkin", staffToken, map[string]string{"code": pass.Barcodes[0].Message}).problem(t, 409)
	st.do("GET", "/api/v1/tickets/"+tk["ticketId"].(string)+"/pass.pkpass", fan, nil).problem(t, 409)
	st.do("GET", "/api/v1/tickets/"+tickets["A2"]["ticketId"].(string)+"/pass.pkpass", st.guest(), nil).problem(t, 404)
}

// TestWalletPassUnconfigured: without a pass certificate the endpoint is a 404 problem that says so.
func TestWalletPassUnconfigured(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	fan := st.guest()
	b, tickets := st.paidTickets(fan, st.show(), "A1")
	if page := st.do("GET", "/bookings/"+b, fan, nil); page.status != 200 || bytes.Contains(page.body, []byte("data-wallet")) {
		t.Fatalf("booking page: %d, want no Add to Wallet", page.status)
	}
	p := st.do("GET", "/api/v1/tickets/"+tickets["A1"]["ticketId"].(string)+"/pass.pkpass", fan, nil).problem(t, 404)
	if !strings.Contains(p.Detail, "no pass certificate") {
		t.Fatalf("problem %+v, want it to say no certificate is configured", p)
	}
}
