package qr_test

import (
	"bytes"
	"fmt"
	"image/png"
	"strconv"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/qr"
)

func newSigner(t testing.TB) *ticket.Signer {
	t.Helper()
	key, _, err := ticket.LoadKey("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ticket.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestQR(t *testing.T) {
	s := newSigner(t)
	code, _ := s.Sign("tk_1", "sh_1", "A1")
	b, err := qr.PNG(code, 0)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if got := img.Bounds().Dx(); got != 256 {
		t.Fatalf("width = %d, want 256", got)
	}
	if _, err := qr.PNG(strings.Repeat("x", 5000), 128); err == nil {
		t.Fatal("QR accepted content too large for any QR version")
	}
}

// TestQRScans: twenty ticket codes rendered at the sizes pages use read back as themselves with ZXing (gozxing), every
// time. Scaled to the exact size with fractional modules, about one in thirty failed.
func TestQRScans(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	for i := range 20 {
		id := fmt.Sprintf("tk_%032x", uint64(i)*0x9e3779b97f4a7c15)
		code, err := s.Sign(id, fmt.Sprintf("sh_%032x", i*7919), "B"+strconv.Itoa(i%20+1))
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{200, 256, 512} {
			b, err := qr.PNG(code, size)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
				t.Fatalf("size %d: %v %v", size, err, img.Bounds())
			}
			bmp, _ := gozxing.NewBinaryBitmapFromImage(img)
			res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
			if err != nil || res.GetText() != code {
				t.Fatalf("code %d at %d px: %v", i, size, err)
			}
		}
	}
}
