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
	showText  = regexp.MustCompile(`\(((?:\\.|[^\\)])*)\)\s*Tj`)
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
	for _, s := range stream.FindAllSubmatch(data, -1) {
		body := s[2]
		if strings.Contains(string(s[1]), "/FlateDecode") {
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
