// Package wallet makes Apple Wallet passes (.pkpass) of tickets: a zip of pass.json, the icons, manifest.json
// (the SHA-1 of every other file) and signature, a detached PKCS#7 signature of manifest.json made with the pass
// certificate and key the deployment configures, with Apple's WWDR intermediate when one is given. The pass's
// barcode is the ticket's current code, so a pass saved before a refund or a transfer stops admitting with the
// ticket: check-in asks the ledger.
package wallet

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/sha1" //nolint:gosec // Wallet's manifest format is SHA-1; it names files, the signature protects it
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"time"

	"github.com/smallstep/pkcs7"

	"github.com/flashseat/flashseat/booking"
)

// ContentType is what Issuer.Pass produces.
const ContentType = "application/vnd.apple.pkpass"

// Config names the pass certificate. With CertFile empty there is no Issuer and no passes.
type Config struct {
	CertFile     string // PEM pass certificate (PASS_CERT_FILE)
	KeyFile      string // PEM private key of the certificate (PASS_KEY_FILE)
	WWDRFile     string // PEM Apple WWDR intermediate, optional (PASS_WWDR_FILE)
	PassTypeID   string // pass.com.example.tickets (PASS_TYPE_ID)
	TeamID       string // the Apple team (PASS_TEAM_ID)
	Organization string // shown on the pass (PASS_ORGANIZATION)
}

// Issuer signs passes.
type Issuer struct {
	cfg   Config
	cert  *x509.Certificate
	key   crypto.PrivateKey
	wwdr  *x509.Certificate
	icons map[string][]byte
}

// New loads the certificate, key and intermediate of cfg.
func New(cfg Config) (*Issuer, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" || cfg.PassTypeID == "" || cfg.TeamID == "" {
		return nil, errors.New("wallet: a pass certificate needs PASS_CERT_FILE, PASS_KEY_FILE, PASS_TYPE_ID and PASS_TEAM_ID")
	}
	pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("wallet: pass certificate: %w", err)
	}
	i := &Issuer{cfg: cfg, key: pair.PrivateKey}
	if i.cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
		return nil, fmt.Errorf("wallet: pass certificate: %w", err)
	}
	if cfg.WWDRFile != "" {
		raw, err := os.ReadFile(cfg.WWDRFile)
		if err != nil {
			return nil, fmt.Errorf("wallet: WWDR certificate: %w", err)
		}
		b, _ := pem.Decode(raw)
		if b == nil {
			return nil, errors.New("wallet: WWDR certificate: no PEM block")
		}
		if i.wwdr, err = x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fmt.Errorf("wallet: WWDR certificate: %w", err)
		}
	}
	if i.cfg.Organization == "" {
		i.cfg.Organization = "flashseat"
	}
	i.icons = map[string][]byte{}
	for name, size := range map[string]int{"icon.png": 29, "icon@2x.png": 58, "icon@3x.png": 87} {
		if i.icons[name], err = icon(size); err != nil {
			return nil, err
		}
	}
	return i, nil
}

// icon is a plain square in the site's colour: Wallet refuses a pass without icon.png.
func icon(size int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	draw.Draw(img, img.Bounds(), &image.Uniform{C: color.RGBA{R: 0x1f, G: 0x4e, B: 0xd8, A: 0xff}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("wallet: icon: %w", err)
	}
	return b.Bytes(), nil
}

type field struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Value string `json:"value"`
}

// passJSON is Wallet's pass.json for an event ticket.
type passJSON struct {
	FormatVersion      int       `json:"formatVersion"`
	PassTypeIdentifier string    `json:"passTypeIdentifier"`
	SerialNumber       string    `json:"serialNumber"`
	TeamIdentifier     string    `json:"teamIdentifier"`
	OrganizationName   string    `json:"organizationName"`
	Description        string    `json:"description"`
	RelevantDate       string    `json:"relevantDate,omitempty"`
	Barcodes           []barcode `json:"barcodes"`
	EventTicket        struct {
		PrimaryFields   []field `json:"primaryFields"`
		SecondaryFields []field `json:"secondaryFields"`
		AuxiliaryFields []field `json:"auxiliaryFields"`
		BackFields      []field `json:"backFields"`
	} `json:"eventTicket"`
}

type barcode struct {
	Format          string `json:"format"`
	Message         string `json:"message"`
	MessageEncoding string `json:"messageEncoding"`
	AltText         string `json:"altText,omitempty"`
}

// Pass returns the signed .pkpass of ticket t of show.
func (i *Issuer) Pass(show booking.Show, t booking.TicketInfo) ([]byte, error) {
	p := passJSON{FormatVersion: 1, PassTypeIdentifier: i.cfg.PassTypeID, SerialNumber: t.ID,
		TeamIdentifier: i.cfg.TeamID, OrganizationName: i.cfg.Organization, Description: "Ticket for " + show.Title,
		Barcodes: []barcode{{Format: "PKBarcodeFormatQR", Message: t.Code, MessageEncoding: "iso-8859-1", AltText: "Seat " + t.SeatID}}}
	if !show.StartsAt.IsZero() {
		p.RelevantDate = show.StartsAt.UTC().Format(time.RFC3339)
	}
	p.EventTicket.PrimaryFields = []field{{Key: "event", Label: "EVENT", Value: show.Title}}
	p.EventTicket.SecondaryFields = []field{{Key: "seat", Label: "SEAT", Value: t.SeatID},
		{Key: "time", Label: "TIME", Value: show.StartsAt.UTC().Format("Mon 2 Jan 2006 15:04 MST")}}
	p.EventTicket.AuxiliaryFields = []field{{Key: "venue", Label: "VENUE", Value: show.Venue}, {Key: "hall", Label: "HALL", Value: show.Hall}}
	p.EventTicket.BackFields = []field{{Key: "ticket", Label: "Ticket", Value: t.ID}, {Key: "booking", Label: "Booking", Value: t.BookingID}}
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	files := map[string][]byte{"pass.json": pj}
	for name, data := range i.icons {
		files[name] = data
	}
	manifest := map[string]string{}
	for name, data := range files {
		sum := sha1.Sum(data) //nolint:gosec // the format's choice
		manifest[name] = hex.EncodeToString(sum[:])
	}
	mj, err := json.Marshal(manifest)
	if err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	sig, err := i.sign(mj)
	if err != nil {
		return nil, err
	}
	files["manifest.json"], files["signature"] = mj, sig
	var out bytes.Buffer
	z := zip.NewWriter(&out)
	for _, name := range []string{"pass.json", "icon.png", "icon@2x.png", "icon@3x.png", "manifest.json", "signature"} {
		w, err := z.Create(name)
		if err != nil {
			return nil, fmt.Errorf("wallet: %w", err)
		}
		if _, err := w.Write(files[name]); err != nil {
			return nil, fmt.Errorf("wallet: %w", err)
		}
	}
	if err := z.Close(); err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	return out.Bytes(), nil
}

// sign is the detached PKCS#7 (DER) signature of manifest that Wallet checks: signer the pass certificate,
// carrying the WWDR intermediate so a device can chain it to Apple's root.
func (i *Issuer) sign(manifest []byte) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(manifest)
	if err != nil {
		return nil, fmt.Errorf("wallet: sign: %w", err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	var chain []*x509.Certificate
	if i.wwdr != nil {
		chain = append(chain, i.wwdr)
	}
	if err := sd.AddSignerChain(i.cert, i.key, chain, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("wallet: sign: %w", err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		return nil, fmt.Errorf("wallet: sign: %w", err)
	}
	return der, nil
}
