package e2e

import (
	"bytes"
	"image"
	"image/color"
	_ "image/png" // QR codes are PNGs
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/makiuchi-d/gozxing/qrcode/decoder"

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
	if err == nil {
		return res.GetText()
	}
	// gozxing's detector misses a few percent of these version-9 codes (a finder-like pattern in the data throws
	// its module-size estimate off; 6 in 300 in a trial), while its decoder reads every one of them from the
	// module grid. The image is a clean rendering, not a photo, so the grid is read straight off it.
	dr, gerr := decoder.NewDecoder().DecodeBoolMap(modules(img), nil)
	if gerr != nil {
		t.Fatalf("QR decode: detector: %v; from the module grid: %v", err, gerr)
	}
	return dr.GetText()
}

// modules samples a rendered QR code's module grid: the dark bounding box is the symbol, the top-left finder
// pattern's first row (7 modules) gives the module size, and the dimension is the nearest 17+4v.
func modules(img image.Image) [][]bool {
	b := img.Bounds()
	dark := func(x, y int) bool { return color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y < 128 }
	minX, minY, maxX, maxY := b.Max.X, b.Max.Y, -1, -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if dark(x, y) {
				minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
			}
		}
	}
	run := 0
	for x := minX; x <= maxX && dark(x, minY); x++ {
		run++
	}
	if run == 0 {
		return nil
	}
	width := float64(maxX - minX + 1)
	dim := 17 + 4*int(math.Round((width/(float64(run)/7)-17)/4))
	module := width / float64(dim)
	grid := make([][]bool, dim)
	for r := range dim {
		grid[r] = make([]bool, dim)
		for c := range dim {
			grid[r][c] = dark(minX+int((float64(c)+0.5)*module), minY+int((float64(r)+0.5)*module))
		}
	}
	return grid
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
