package e2e

import (
	"bytes"
	"image"
	_ "image/png" // QR codes are PNGs
	"net/http"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// qrText reads the text of a QR code image. gozxing is a pure-Go port of ZXing, the reference barcode decoder:
// it reads the PNG as a scanner would, independently of the library that drew it.
func qrText(t *testing.T, png []byte) string {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(png))
	if err != nil {
		t.Fatalf("QR image: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatalf("QR bitmap: %v", err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("QR decode: %v", err)
	}
	return res.GetText()
}

// checkInAtDoor presents a ticket's code at the door (the check-in API, with the operator's token) and returns the status.
func checkInAtDoor(t *testing.T, p *platformtest.Platform, code string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", p.BaseURL+"/api/v1/checkin", strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// qrPNG fetches a ticket's QR image as its owner.
func qrPNG(t *testing.T, p *platformtest.Platform, userToken, ticketID string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", p.BaseURL+"/api/v1/tickets/"+ticketID+"/qr.png", nil)
	req.Header.Set("Authorization", "Bearer "+userToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil || res.StatusCode != 200 {
		t.Fatalf("QR image: %d %v", res.StatusCode, err)
	}
	return b.Bytes()
}
