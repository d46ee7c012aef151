package pdf

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"fmt"
	"image"
	"strings"
	"unicode/utf16"

	sfnt "github.com/tdewolff/font"
)

// writer writes a PDF 1.7 file: a classic cross-reference table and no object streams, so any reader copes.
// Text is set in CID-keyed fonts (Type0, Identity-H) over subsets of the embedded TrueType faces.
type writer struct {
	buf     bytes.Buffer
	offsets []int // of object n at n-1
	fontRes int   // the fonts' resource dictionary, shared by all pages and written last
	tree    int   // the page tree, which each page names as its parent
	fonts   []*fontUse
	zw      *zlib.Writer
}

// fontUse is one face as used in the document. Its character codes (CIDs) are not the face's glyph ids: each
// code is one glyph standing for one piece of text, so that the ToUnicode map can give back exactly the text a
// glyph was set for (the same glyph of a conjunct or a matra stands for different text in different places).
type fontUse struct {
	face  *face
	ref   int
	res   string // the resource name: /F1
	codes map[cidKey]uint16
	keys  []cidKey // code i+1 is keys[i]; code 0 is .notdef
}

type cidKey struct {
	gid  uint16
	text string
}

func newWriter() *writer {
	w := &writer{}
	w.buf.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	w.fontRes, w.tree = w.alloc(), w.alloc()
	return w
}

// alloc reserves an object number, for an object written later.
func (w *writer) alloc() int {
	w.offsets = append(w.offsets, 0)
	return len(w.offsets)
}

// object writes object ref with body, a dictionary or other value.
func (w *writer) object(ref int, body string) {
	w.offsets[ref-1] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n%s\nendobj\n", ref, body)
}

// stream writes object ref as a deflated stream; dict holds the entries other than Length and Filter (no
// nested dictionaries).
func (w *writer) stream(ref int, dict string, data []byte) {
	var z bytes.Buffer
	if w.zw == nil {
		w.zw, _ = zlib.NewWriterLevel(&z, zlib.BestSpeed)
	} else {
		w.zw.Reset(&z) // a deflater is some 600 KB of tables: one per document
	}
	w.zw.Write(data)
	w.zw.Close()
	w.offsets[ref-1] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< %s /Filter /FlateDecode /Length %d >>\nstream\n", ref, dict, z.Len())
	w.buf.Write(z.Bytes())
	w.buf.WriteString("\nendstream\nendobj\n")
}

// font returns the document's use of f, added on first use.
func (w *writer) font(f *face) *fontUse {
	for _, u := range w.fonts {
		if u.face == f {
			return u
		}
	}
	u := &fontUse{face: f, ref: w.alloc(), res: fmt.Sprintf("F%d", len(w.fonts)+1), codes: map[cidKey]uint16{}}
	w.fonts = append(w.fonts, u)
	return u
}

// code is the character code of g in u.
func (u *fontUse) code(g glyph) uint16 {
	k := cidKey{g.id, g.text}
	c, ok := u.codes[k]
	if !ok {
		u.keys = append(u.keys, k)
		c = uint16(len(u.keys))
		u.codes[k] = c
	}
	return c
}

// image writes a black-and-white image (a QR code) as a 1-bit XObject and returns its object number: an eighth
// of the grey pixels, and deflated in a fraction of their time.
func (w *writer) image(img *image.Gray) int {
	b := img.Bounds()
	stride := (b.Dx() + 7) / 8
	bits := make([]byte, stride*b.Dy())
	for y := range b.Dy() {
		for x := range b.Dx() {
			if img.GrayAt(b.Min.X+x, b.Min.Y+y).Y >= 128 {
				bits[y*stride+x/8] |= 0x80 >> (x % 8)
			}
		}
	}
	ref := w.alloc()
	w.stream(ref, fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "+
		"/BitsPerComponent 1", b.Dx(), b.Dy()), bits)
	return ref
}

// finish writes the fonts, the catalog and the trailer, and returns the file.
func (w *writer) finish(pages []int, info string) ([]byte, error) {
	var res strings.Builder
	res.WriteString("<<")
	for _, u := range w.fonts {
		if err := w.writeFont(u); err != nil {
			return nil, err
		}
		fmt.Fprintf(&res, " /%s %d 0 R", u.res, u.ref)
	}
	res.WriteString(" >>")
	w.object(w.fontRes, res.String())
	kids := make([]string, len(pages))
	for i, p := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", p)
	}
	catalog, infoRef := w.alloc(), w.alloc()
	w.object(w.tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	w.object(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", w.tree))
	w.object(infoRef, info)
	xref := w.buf.Len()
	fmt.Fprintf(&w.buf, "xref\n0 %d\n0000000000 65535 f \n", len(w.offsets)+1)
	for _, off := range w.offsets {
		fmt.Fprintf(&w.buf, "%010d 00000 n \n", off)
	}
	id := sha256.Sum256(w.buf.Bytes())
	fmt.Fprintf(&w.buf, "trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /ID [<%x> <%x>] >>\nstartxref\n%d\n%%%%EOF\n",
		len(w.offsets)+1, catalog, infoRef, id[:16], id[:16], xref)
	return w.buf.Bytes(), nil
}

// writeFont writes u's Type0 font with its CIDFontType2 descendant over a subset of the face holding the glyphs
// used, their widths, the map from codes to the subset's glyphs, and the ToUnicode map from codes to text.
func (w *writer) writeFont(u *fontUse) error {
	f := u.face
	gids := []uint16{0}
	seen := map[uint16]uint16{0: 0}
	for _, k := range u.keys {
		if _, ok := seen[k.gid]; !ok {
			seen[k.gid] = uint16(len(gids))
			gids = append(gids, k.gid)
		}
	}
	// Subset writes into the maxp, head and hhea tables it was given (its `&(*old.Maxp)` is the same pointer, not a
	// copy: the glyph count, indexToLocFormat, numberOfHMetrics), and the parsed face is shared by every render:
	// it subsets a copy with those three of its own (TestRenderConcurrently's race detector found head and hhea).
	own := *f.sfnt
	maxp, head, hhea := *f.sfnt.Maxp, *f.sfnt.Head, *f.sfnt.Hhea
	own.Maxp, own.Head, own.Hhea = &maxp, &head, &hhea
	sub, err := own.Subset(append([]uint16(nil), gids...), sfnt.SubsetOptions{Tables: sfnt.KeepPDFTables})
	if err != nil {
		return fmt.Errorf("pdf: subset %s: %w", f.name, err)
	}
	program := sub.Write()
	scale := 1000 / f.upem
	cidToGID := make([]byte, 2*(len(u.keys)+1))
	var widths strings.Builder
	var cmap []string
	for i, k := range u.keys {
		code, gid := i+1, seen[k.gid]
		cidToGID[2*code], cidToGID[2*code+1] = byte(gid>>8), byte(gid)
		fmt.Fprintf(&widths, " %d [%d]", code, int(float64(f.sfnt.GlyphAdvance(k.gid))*scale+0.5))
		if k.text != "" {
			cmap = append(cmap, fmt.Sprintf("<%04X> <%s>\n", code, utf16Hex(k.text)))
		}
	}
	// A subset's name starts with six capital letters of its own (ISO 32000 9.6.4), here from its glyphs.
	sum := sha256.Sum256(cidToGID)
	tag := make([]byte, 6)
	for i := range tag {
		tag[i] = 'A' + sum[i]%26
	}
	name := string(tag) + "+" + f.name

	fileRef, descRef, cidRef, mapRef, uniRef := w.alloc(), w.alloc(), w.alloc(), w.alloc(), w.alloc()
	w.stream(fileRef, fmt.Sprintf("/Length1 %d", len(program)), program)
	h := f.sfnt.Head
	w.object(descRef, fmt.Sprintf("<< /Type /FontDescriptor /FontName /%s /Flags 4 /FontBBox [%d %d %d %d] "+
		"/ItalicAngle 0 /Ascent %d /Descent %d /CapHeight %d /StemV 80 /FontFile2 %d 0 R >>", name,
		int(float64(h.XMin)*scale), int(float64(h.YMin)*scale), int(float64(h.XMax)*scale), int(float64(h.YMax)*scale),
		int(float64(f.sfnt.Hhea.Ascender)*scale), int(float64(f.sfnt.Hhea.Descender)*scale),
		int(float64(f.sfnt.OS2.SCapHeight)*scale), fileRef))
	w.stream(mapRef, "", cidToGID)
	w.object(cidRef, fmt.Sprintf("<< /Type /Font /Subtype /CIDFontType2 /BaseFont /%s "+
		"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R "+
		"/DW 0 /W [%s ] /CIDToGIDMap %d 0 R >>", name, descRef, widths.String(), mapRef))
	w.stream(uniRef, "", toUnicode(cmap))
	w.object(u.ref, fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /%s /Encoding /Identity-H "+
		"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", name, cidRef, uniRef))
	return nil
}

// toUnicode is a ToUnicode CMap of the bfchar lines given (at most 100 to a block, as the CMap format wants).
func toUnicode(lines []string) []byte {
	var b strings.Builder
	b.WriteString("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n" +
		"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n" +
		"/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n")
	for all := lines; len(all) > 0; {
		block := all[:min(100, len(all))]
		all = all[len(block):]
		fmt.Fprintf(&b, "%d beginbfchar\n%sendbfchar\n", len(block), strings.Join(block, ""))
	}
	b.WriteString("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n")
	return []byte(b.String())
}

// utf16Hex is s in UTF-16BE, in hex: how PDF text strings and CMaps spell Unicode.
func utf16Hex(s string) string {
	var b strings.Builder
	for _, c := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, "%04X", c)
	}
	return b.String()
}

// textString is s as a PDF text string: UTF-16BE with its byte-order mark, in hex.
func textString(s string) string { return "<FEFF" + utf16Hex(s) + ">" }
