// Package pdftest reads a PDF the way a checker must, without trusting the library that wrote it: the header and
// trailer are where they belong, every cross-reference offset lands on its object, the pages are found through
// the catalog's page tree, and each page's content streams are interpreted for the text they show (mapped back to
// Unicode through each font's ToUnicode CMap, as a text extractor does) and the images they draw.
package pdftest

import (
	"bytes"
	"compress/zlib"
	"image"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Doc is what Read found.
type Doc struct {
	Pages  int
	Text   []string        // each page's text, in page order: one line per text object (BT … ET)
	Images [][]*image.Gray // each page's 8-bit grey images, in the order the page draws them
}

// object is one indirect object: its dictionary (or other value) and, for a stream, its decoded data.
type object struct {
	dict   string
	data   []byte
	stream bool
}

var (
	startxref = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	xrefEntry = regexp.MustCompile(`(?m)^(\d{10}) (\d{5}) n\s*$`)
	objHeader = regexp.MustCompile(`^(\d+) (\d+) obj\b`)
	// length is a stream dictionary's /Length: a stream is exactly that many bytes. Without it, the end is found
	// by the endstream keyword, and a deflated stream whose last byte is a CR (one in 256: its checksum's) loses
	// that byte to the optional CR before the keyword.
	length      = regexp.MustCompile(`/Length (\d+)\b`)
	streamStart = regexp.MustCompile(`\bstream\r?\n`)
	trailerRoot = regexp.MustCompile(`(?s)trailer\s*<<.*?/Root (\d+) \d+ R`)
	ref         = regexp.MustCompile(`^(\d+) \d+ R$`)
)

// reader holds a file's objects while Read walks it.
type reader struct {
	t       testing.TB
	objects map[int]object
}

// Read checks that data is a well-formed PDF and returns its pages, text and images; it fails t otherwise.
func Read(t testing.TB, data []byte) Doc {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("%PDF-1.")) {
		t.Fatalf("not a PDF: starts %q", data[:min(len(data), 16)])
	}
	m := startxref.FindSubmatch(data)
	if m == nil {
		t.Fatal("PDF has no startxref trailer")
	}
	off, _ := strconv.Atoi(string(m[1]))
	if off >= len(data) || !bytes.HasPrefix(data[off:], []byte("xref")) {
		t.Fatalf("startxref %d does not point at the cross-reference table", off)
	}
	entries := xrefEntry.FindAllSubmatch(data[off:], -1)
	if len(entries) == 0 {
		t.Fatal("empty cross-reference table")
	}
	r := &reader{t: t, objects: map[int]object{}}
	for i, e := range entries {
		o, _ := strconv.Atoi(string(e[1]))
		h := objHeader.FindSubmatch(data[o:min(len(data), o+20)])
		if o >= len(data) || h == nil {
			t.Fatalf("cross-reference entry %d (offset %d) does not point at an object", i+1, o)
		}
		n, _ := strconv.Atoi(string(h[1]))
		r.objects[n] = r.parseObject(data, o+len(h[0]))
	}
	root := trailerRoot.FindSubmatch(data[off:])
	if root == nil {
		t.Fatal("trailer names no /Root catalog")
	}
	n, _ := strconv.Atoi(string(root[1]))
	catalog := parseDict(r.object(n).dict)
	var d Doc
	for _, page := range r.pages(catalog["Pages"], 0) {
		text, images := r.page(page)
		d.Pages++
		d.Text = append(d.Text, text)
		d.Images = append(d.Images, images)
	}
	return d
}

// parseObject reads the object whose value starts at data[at:].
func (r *reader) parseObject(data []byte, at int) object {
	rest := data[at:]
	end := bytes.Index(rest, []byte("endobj"))
	s := streamStart.FindIndex(rest)
	if s == nil || (end >= 0 && end < s[0]) {
		if end < 0 {
			r.t.Fatalf("object at %d has no endobj", at)
		}
		return object{dict: strings.TrimSpace(string(rest[:end]))}
	}
	o := object{dict: strings.TrimSpace(string(rest[:s[0]])), stream: true}
	body := rest[s[1]:]
	if l := length.FindStringSubmatch(o.dict); l != nil {
		if n, _ := strconv.Atoi(l[1]); n <= len(body) {
			body = body[:n]
		}
	} else if e := bytes.Index(body, []byte("endstream")); e >= 0 {
		body = bytes.TrimRight(body[:e], "\r\n")
	}
	o.data = body
	if strings.Contains(o.dict, "/FlateDecode") && !strings.Contains(o.dict, "/DCTDecode") {
		z, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			r.t.Fatalf("stream at %d: not deflated: %v", at, err)
		}
		if o.data, err = io.ReadAll(z); err != nil {
			r.t.Fatalf("corrupt deflated stream at %d: %v", at, err)
		}
	}
	return o
}

// object is object n; a reference to an object that is not there fails the test.
func (r *reader) object(n int) object {
	o, ok := r.objects[n]
	if !ok {
		r.t.Fatalf("object %d is referenced but not in the file", n)
	}
	return o
}

// resolve is v, or the object v refers to.
func (r *reader) resolve(v string) object {
	if m := ref.FindStringSubmatch(strings.TrimSpace(v)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return r.object(n)
	}
	return object{dict: v}
}

// pages are the leaves of the page tree at node, in order.
func (r *reader) pages(node string, depth int) []map[string]string {
	if depth > 32 {
		r.t.Fatal("page tree deeper than 32: a cycle")
	}
	d := parseDict(r.resolve(node).dict)
	switch d["Type"] {
	case "/Page":
		return []map[string]string{d}
	case "/Pages":
		var out []map[string]string
		kids := arrayItems(d["Kids"])
		for _, k := range kids {
			out = append(out, r.pages(k, depth+1)...)
		}
		if n, _ := strconv.Atoi(d["Count"]); n != len(out) {
			r.t.Fatalf("page tree node counts %d pages and holds %d", n, len(out))
		}
		return out
	}
	r.t.Fatalf("page tree node %q is neither /Pages nor /Page", node)
	return nil
}

// page is one page's text and images.
func (r *reader) page(p map[string]string) (string, []*image.Gray) {
	res := parseDict(r.resolve(p["Resources"]).dict)
	fonts := map[string]*font{}
	for name, v := range parseDict(r.resolve(res["Font"]).dict) {
		fonts[name] = r.font(v)
	}
	xobjects := parseDict(r.resolve(res["XObject"]).dict)
	var content []byte
	contents := p["Contents"]
	if !strings.HasPrefix(contents, "[") {
		contents = "[" + contents + "]"
	}
	for _, c := range arrayItems(contents) {
		content = append(append(content, r.resolve(c).data...), '\n')
	}
	return r.interpret(content, fonts, xobjects)
}

// arrayItems are the items of a PDF array, references kept whole ("5 0 R").
func arrayItems(v string) []string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return nil
	}
	toks := tokens([]byte(v[1 : len(v)-1]))
	var out []string
	for i := 0; i < len(toks); i++ {
		if i+2 < len(toks) && toks[i+2] == "R" {
			out = append(out, toks[i]+" "+toks[i+1]+" R")
			i += 2
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

// parseDict reads the top level of a dictionary "<< /Key value … >>" into raw values by key (without the slash).
func parseDict(v string) map[string]string {
	out := map[string]string{}
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "<<") || !strings.HasSuffix(v, ">>") {
		return out
	}
	toks := tokens([]byte(v[2 : len(v)-2]))
	for i := 0; i+1 < len(toks); i += 2 {
		key, val := toks[i], toks[i+1]
		if i+3 < len(toks) && toks[i+3] == "R" {
			val += " " + toks[i+2] + " R"
			i += 2
		}
		out[strings.TrimPrefix(key, "/")] = val
	}
	return out
}
