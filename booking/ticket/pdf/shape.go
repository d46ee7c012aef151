package pdf

import (
	"strings"

	"github.com/go-text/typesetting/di"
	"github.com/go-text/typesetting/shaping"
	"golang.org/x/image/math/fixed"
)

// glyph is one glyph set on a line: its face, its id in the face, where it sits from the line's origin (points,
// y up) and the text it stands for when the page is read back (ToUnicode).
type glyph struct {
	face *face
	id   uint16
	x, y float64
	text string
}

// line is a shaped line of text at one size.
type line struct {
	text   string
	size   float64
	width  float64
	glyphs []glyph
}

// shaper turns text into positioned glyphs with HarfBuzz's algorithms (go-text's port): Indic conjuncts, matras
// placed before their consonant, reph and marks come out as the font designer drew them, which placing one glyph
// per character cannot do. One shaper serves one render (it keeps buffers).
type shaper struct {
	hb  shaping.HarfbuzzShaper
	seg shaping.Segmenter
	fm  *fontmap
}

// shape sets text on one line at size points.
//
// Each glyph is given some of the text of its cluster (the syllable HarfBuzz shaped as one), in order: glyph i
// gets the cluster's rune i and the last glyph the rest. Whatever order the glyphs are drawn in (the i matra ि
// is drawn before its consonant), reading the glyphs in drawing order gives back the text as it was written.
func (s *shaper) shape(text string, size float64) line {
	runes := []rune(text)
	l := line{text: text, size: size}
	if len(runes) == 0 {
		return l
	}
	in := shaping.Input{Text: runes, RunEnd: len(runes), Direction: di.DirectionLTR, Face: s.fm.shapes[0],
		Size: fixed.Int26_6(size*64 + 0.5)}
	for _, run := range s.seg.Split(in, s.fm) {
		out := s.hb.Shape(run)
		f := s.fm.lookup(run.Face)
		for i := 0; i < len(out.Glyphs); {
			first := out.Glyphs[i]
			n := max(1, min(first.GlyphCount, len(out.Glyphs)-i))
			cluster := runes[first.ClusterIndex:min(len(runes), first.ClusterIndex+first.RuneCount)]
			for j, g := range out.Glyphs[i : i+n] {
				var part []rune
				switch {
				case j == n-1 && j < len(cluster):
					part = cluster[j:]
				case j < len(cluster):
					part = cluster[j : j+1]
				}
				l.glyphs = append(l.glyphs, glyph{face: f, id: uint16(g.GlyphID), x: l.width + pt(g.XOffset),
					y: pt(g.YOffset), text: string(part)})
				l.width += pt(g.XAdvance)
			}
			i += n
		}
	}
	return l
}

func pt(v fixed.Int26_6) float64 { return float64(v) / 64 }

// wrap sets text in lines no wider than width, breaking between words; a word wider than width gets a line of
// its own.
func (s *shaper) wrap(text string, size, width float64) []line {
	var lines []line
	var cur string
	for _, w := range strings.Fields(text) {
		next := w
		if cur != "" {
			next = cur + " " + w
		}
		if cur != "" && s.shape(next, size).width > width {
			lines = append(lines, s.shape(cur, size))
			next = w
		}
		cur = next
	}
	if cur != "" {
		lines = append(lines, s.shape(cur, size))
	}
	return lines
}
