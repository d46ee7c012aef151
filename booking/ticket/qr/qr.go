// Package qr renders ticket codes as QR code images, for the ticket pages and API (booking/http) and the
// confirmation mail (booking/notify). It is apart from booking/ticket, which the domain imports, so that the
// domain does not depend on a QR library.
package qr

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"

	qrcode "github.com/skip2/go-qrcode"
)

// PNG renders code as a PNG QR code of size×size pixels (a size of 0 or less picks 256), with medium error
// correction so a creased printout still scans.
func PNG(code string, size int) ([]byte, error) {
	img, err := Image(code, size)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("qr: %w", err)
	}
	return b.Bytes(), nil
}

// Image renders code as a black-and-white QR code of size×size pixels (a size of 0 or less picks 256), for
// documents that embed the pixels themselves (booking/ticket/pdf).
//
// Every module is a whole number of pixels, centred in a white margin that takes up the rest: scaled to exactly
// size pixels, a module of, say, 3.9 pixels has blurred, uneven edges, and ZXing's decoder misread about one
// ticket code in thirty at 256 pixels.
func Image(code string, size int) (*image.Gray, error) {
	if size <= 0 {
		size = 256
	}
	q, err := qrcode.New(code, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("qr: %w", err)
	}
	modules := len(q.Bitmap()) // with go-qrcode's quiet zone
	qr := q.Image(-max(1, size/modules))
	w := qr.Bounds().Dx()
	img := image.NewGray(image.Rect(0, 0, max(size, w), max(size, w)))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	off := (img.Bounds().Dx() - w) / 2
	draw.Draw(img, image.Rect(off, off, off+w, off+w), qr, qr.Bounds().Min, draw.Src)
	return img, nil
}
