// Package pdftest reads a PDF the way a checker must, without trusting the library that wrote it: the header and
// trailer are where they belong, every cross-reference offset lands on its object, and the page objects and the
// text drawn on them are counted and collected from the (deflated) content streams.
package pdftest

import (
	"bytes"
	"compress/zlib"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Doc is what Read found.
type Doc struct {
	Pages int
	Text  []string // each page's text, in page order
}

var (
	startxref = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	xrefEntry = regexp.MustCompile(`(?m)^(\d{10}) (\d{5}) n\s*$`)
	pageObj   = regexp.MustCompile(`/Type /Page\b[^s]`)
	stream    = regexp.MustCompile(`(?s)<<([^>]*(?:>[^>][^>]*)*)>>\s*stream\r?\n(.*?)\r?\nendstream`)
	// length is a stream dictionary's /Length: a stream is exactly that many bytes. Without it, the end is found
	// by the endstream keyword, and a deflated stream whose last byte is a CR (one in 256: its checksum's) loses
	// that byte to the optional CR before the keyword.
	length   = regexp.MustCompile(`/Length (\d+)\b`)
	showText = regexp.MustCompile(`\(((?:\\.|[^\\)])*)\)\s*Tj`)
)

// Read checks that data is a well-formed PDF and returns its pages and text; it fails t otherwise.
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
	for i, e := range entries {
		o, _ := strconv.Atoi(string(e[1]))
		if o >= len(data) || !regexp.MustCompile(`^\d+ 0 obj`).Match(data[o:min(len(data), o+20)]) {
			t.Fatalf("cross-reference entry %d (offset %d) does not point at an object", i+1, o)
		}
	}
	var d Doc
	d.Pages = len(pageObj.FindAll(data, -1))
	for _, at := range stream.FindAllSubmatchIndex(data, -1) {
		dict, body := data[at[2]:at[3]], data[at[4]:at[5]]
		if l := length.FindSubmatch(dict); l != nil {
			if n, _ := strconv.Atoi(string(l[1])); at[4]+n <= len(data) {
				body = data[at[4] : at[4]+n]
			}
		}
		if bytes.Contains(dict, []byte("/FlateDecode")) {
			r, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				continue // an image stream of another filter chain
			}
			if body, err = io.ReadAll(r); err != nil {
				t.Fatalf("corrupt deflated stream: %v", err)
			}
		}
		var text []string
		for _, tj := range showText.FindAllSubmatch(body, -1) {
			text = append(text, unescape(string(tj[1])))
		}
		if len(text) > 0 {
			d.Text = append(d.Text, strings.Join(text, "\n"))
		}
	}
	return d
}

func unescape(s string) string {
	return strings.NewReplacer(`\(`, "(", `\)`, ")", `\\`, `\`).Replace(s)
}
