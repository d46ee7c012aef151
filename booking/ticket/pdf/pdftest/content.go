package pdftest

import (
	"encoding/hex"
	"image"
	"strconv"
	"strings"
	"unicode/utf16"
)

// font is what a text extractor knows of a font: how many bytes a character code takes and, when the font has a
// ToUnicode CMap, the text of each code. Without one, the bytes are the text (the simple fonts' single-byte
// encodings, WinAnsi for the standard fonts).
type font struct {
	codeLen   int
	toUnicode map[uint32]string
}

func (r *reader) font(v string) *font {
	d := parseDict(r.resolve(v).dict)
	f := &font{codeLen: 1}
	if d["Subtype"] == "/Type0" {
		f.codeLen = 2 // Identity-H and the other CID encodings this reader meets
	}
	if tu, ok := d["ToUnicode"]; ok {
		f.toUnicode = map[uint32]string{}
		f.parseCMap(r.resolve(tu).data)
	}
	return f
}

// parseCMap reads the codespace and the bfchar and bfrange mappings of a ToUnicode CMap.
func (f *font) parseCMap(data []byte) {
	toks := tokens(data)
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "begincodespacerange":
			if i+1 < len(toks) {
				f.codeLen = max(1, len(stringBytes(toks[i+1])))
			}
		case "beginbfchar":
			for i++; i+1 < len(toks) && toks[i] != "endbfchar"; i += 2 {
				f.toUnicode[code(stringBytes(toks[i]))] = utf16String(stringBytes(toks[i+1]))
			}
		case "beginbfrange":
			for i++; i+2 < len(toks) && toks[i] != "endbfrange"; i += 3 {
				lo, hi := code(stringBytes(toks[i])), code(stringBytes(toks[i+1]))
				if strings.HasPrefix(toks[i+2], "[") {
					for k, dst := range arrayItems(toks[i+2]) {
						f.toUnicode[lo+uint32(k)] = utf16String(stringBytes(dst))
					}
					continue
				}
				dst := utf16.Decode(u16(stringBytes(toks[i+2])))
				for c := lo; c <= hi && len(dst) > 0; c++ {
					f.toUnicode[c] = string(dst)
					dst[len(dst)-1]++
				}
			}
		}
	}
}

// text is the text of the character codes b.
func (f *font) text(b []byte) string {
	if f == nil || f.toUnicode == nil {
		return string(b)
	}
	var s strings.Builder
	for i := 0; i+f.codeLen <= len(b); i += f.codeLen {
		t, ok := f.toUnicode[code(b[i:i+f.codeLen])]
		if !ok {
			t = "\uFFFD"
		}
		s.WriteString(t)
	}
	return s.String()
}

func code(b []byte) uint32 {
	var c uint32
	for _, x := range b {
		c = c<<8 | uint32(x)
	}
	return c
}

func u16(b []byte) []uint16 {
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return out
}

func utf16String(b []byte) string { return string(utf16.Decode(u16(b))) }

// interpret runs a page's content stream for the text each text object shows and the images drawn.
func (r *reader) interpret(content []byte, fonts map[string]*font, xobjects map[string]string) (string, []*image.Gray) {
	var lines []string
	var images []*image.Gray
	var line strings.Builder
	var cur *font
	var stack []string
	for _, tok := range tokens(content) {
		if !isOperator(tok) {
			stack = append(stack, tok)
			continue
		}
		last := ""
		if len(stack) > 0 {
			last = stack[len(stack)-1]
		}
		switch tok {
		case "BT":
			line.Reset()
		case "ET":
			if line.Len() > 0 {
				lines = append(lines, line.String())
			}
			line.Reset()
		case "Tf":
			if len(stack) >= 2 {
				cur = fonts[strings.TrimPrefix(stack[len(stack)-2], "/")]
			}
		case "Tj", "'", `"`:
			line.WriteString(cur.text(stringBytes(last)))
		case "TJ":
			for _, item := range arrayItems(last) {
				if strings.HasPrefix(item, "(") || strings.HasPrefix(item, "<") {
					line.WriteString(cur.text(stringBytes(item)))
				}
			}
		case "Do":
			if img := r.image(xobjects[strings.TrimPrefix(last, "/")]); img != nil {
				images = append(images, img)
			}
		}
		stack = stack[:0]
	}
	return strings.Join(lines, "\n"), images
}

// image is the grey image XObject (8 bits or 1 to a pixel) v refers to, as 8-bit grey; nil for any other.
func (r *reader) image(v string) *image.Gray {
	if v == "" {
		return nil
	}
	o := r.resolve(v)
	d := parseDict(o.dict)
	bpc := d["BitsPerComponent"]
	if d["Subtype"] != "/Image" || d["ColorSpace"] != "/DeviceGray" || (bpc != "8" && bpc != "1") {
		return nil
	}
	w, _ := strconv.Atoi(d["Width"])
	h, _ := strconv.Atoi(d["Height"])
	stride := w
	if bpc == "1" {
		stride = (w + 7) / 8
	}
	if w <= 0 || h <= 0 || len(o.data) != stride*h {
		r.t.Fatalf("grey image %dx%d of %s bits holds %d bytes", w, h, bpc, len(o.data))
	}
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if bpc == "1" {
				img.Pix[y*img.Stride+x] = 255 * (o.data[y*stride+x/8] >> (7 - x%8) & 1)
			} else {
				img.Pix[y*img.Stride+x] = o.data[y*stride+x]
			}
		}
	}
	return img
}

func isOperator(tok string) bool {
	c := tok[0]
	return (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'' || c == '"') && tok != "true" &&
		tok != "false" && tok != "null"
}

// stringBytes is the bytes of a literal "(…)" or hex "<…>" string token.
func stringBytes(tok string) []byte {
	if strings.HasPrefix(tok, "<") {
		h := strings.Map(func(r rune) rune {
			if strings.ContainsRune(" \t\r\n", r) {
				return -1
			}
			return r
		}, strings.Trim(tok, "<>"))
		if len(h)%2 == 1 {
			h += "0"
		}
		b, _ := hex.DecodeString(h)
		return b
	}
	if !strings.HasPrefix(tok, "(") || !strings.HasSuffix(tok, ")") {
		return nil
	}
	s := tok[1 : len(tok)-1]
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '\r', '\n': // a line continuation
			if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		default:
			if c >= '0' && c <= '7' {
				n, j := 0, i
				for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
					n = n*8 + int(s[j]-'0')
				}
				out = append(out, byte(n))
				i = j - 1
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// tokens splits PDF syntax into tokens: names, numbers, keywords and operators, and strings, arrays and
// dictionaries each whole (nested ones inside them).
func tokens(b []byte) []string {
	var out []string
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0:
			i++
		case c == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
		case c == '(' || c == '[' || c == '<':
			j := skipValue(b, i)
			out = append(out, string(b[i:j]))
			i = j
		case c == ')' || c == ']' || c == '>' || c == '{' || c == '}':
			i++ // unbalanced: skipped
		default:
			j := i + 1
			for j < len(b) && !strings.ContainsRune(" \t\r\n\f\x00()<>[]{}/%", rune(b[j])) {
				j++
			}
			out = append(out, string(b[i:j]))
			i = j
		}
	}
	return out
}

// skipValue returns the end of the string, array or dictionary starting at b[i].
func skipValue(b []byte, i int) int {
	switch {
	case b[i] == '(':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	case b[i] == '<' && i+1 < len(b) && b[i+1] != '<':
		for j := i; j < len(b); j++ {
			if b[j] == '>' {
				return j + 1
			}
		}
	default: // an array or a dictionary
		open, close := byte('['), byte(']')
		if b[i] == '<' {
			open, close = '<', '>'
		}
		depth := 0
		for j := i; j < len(b); {
			switch {
			case b[j] == '(' || (open == '[' && b[j] == '<') || (open == '<' && b[j] == '['):
				j = skipValue(b, j)
				continue
			case open == '<' && b[j] == '<' && j+1 < len(b) && b[j+1] == '<':
				depth++
				j += 2
				continue
			case open == '<' && b[j] == '<':
				j = skipValue(b, j)
				continue
			case open == '<' && b[j] == '>' && j+1 < len(b) && b[j+1] == '>':
				j += 2
				if depth--; depth == 0 {
					return j
				}
				continue
			case b[j] == open:
				depth++
			case b[j] == close:
				if depth--; depth == 0 {
					return j + 1
				}
			}
			j++
		}
	}
	return len(b)
}
