package pdf

import (
	"bytes"
	"embed"
	"fmt"
	"sync"

	"github.com/go-text/typesetting/font"
	"github.com/go-text/typesetting/language"
	sfnt "github.com/tdewolff/font"
)

// The faces, in the order a character is looked up: Noto Sans (Latin, Greek, Cyrillic) first, then the Indic
// scripts the catalog sells in. All are Regular: a title is made bold by stroking its outlines (render mode 2),
// which keeps the embedded fonts at about a megabyte instead of two. fonts/OFL.txt is their licence.
//
//go:embed fonts/*.ttf
var fontFiles embed.FS

var faceFiles = []struct {
	file   string
	script language.Script // the script the face is made for
}{
	{"NotoSans-Regular.ttf", language.Latin},
	{"NotoSansDevanagari-Regular.ttf", language.Devanagari},
	{"NotoSansTamil-Regular.ttf", language.Tamil},
	{"NotoSansBengali-Regular.ttf", language.Bengali},
}

// face is one embedded font: go-text's view of it shapes text, tdewolff's subsets and measures it for the PDF.
type face struct {
	name   string // the PostScript name, for /BaseFont
	script language.Script
	font   *font.Font // read-only: shared by all renders
	sfnt   *sfnt.SFNT
	upem   float64
}

// faces parses the embedded fonts once, on the first render; they are read-only from then on. go-text's Font is
// safe to share, its Face (with caches) is not: each render makes faces of its own (newFontmap).
var faces = sync.OnceValues(func() ([]*face, error) {
	var out []*face
	for _, ff := range faceFiles {
		name := ff.file
		data, err := fontFiles.ReadFile("fonts/" + name)
		if err != nil {
			return nil, err
		}
		f, err := font.ParseTTF(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("pdf: font %s: %w", name, err)
		}
		s, err := sfnt.ParseSFNT(data, 0)
		if err != nil {
			return nil, fmt.Errorf("pdf: font %s: %w", name, err)
		}
		ps := name[:len(name)-len(".ttf")]
		if records := s.Name.Get(sfnt.NamePostScript); len(records) > 0 {
			ps = records[0].String()
		}
		out = append(out, &face{name: ps, script: ff.script, font: f.Font, sfnt: s, upem: float64(s.Head.UnitsPerEm)})
	}
	return out, nil
})

// fontmap picks each character's face for go-text's segmenter: the face of the run's script when it has the
// character (so a space or a dash inside Devanagari stays in the Devanagari face), else the first that has it,
// else Noto Sans, whose .notdef box shows that something is missing. One serves one render.
type fontmap struct {
	faces  []*face
	shapes []*font.Face // faces[i]'s go-text face, this render's own
	script language.Script
}

func newFontmap(faces []*face) *fontmap {
	m := &fontmap{faces: faces}
	for _, f := range faces {
		m.shapes = append(m.shapes, font.NewFace(f.font))
	}
	return m
}

func (m *fontmap) SetScript(s language.Script) { m.script = s }

func (m *fontmap) ResolveFace(r rune) *font.Face {
	for i, f := range m.faces {
		if _, ok := m.shapes[i].NominalGlyph(r); ok && f.script == m.script {
			return m.shapes[i]
		}
	}
	for _, s := range m.shapes {
		if _, ok := s.NominalGlyph(r); ok {
			return s
		}
	}
	return m.shapes[0]
}

// lookup is the face of go-text face shape.
func (m *fontmap) lookup(shape *font.Face) *face {
	for i, s := range m.shapes {
		if s == shape {
			return m.faces[i]
		}
	}
	return m.faces[0]
}
