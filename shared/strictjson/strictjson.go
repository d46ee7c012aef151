// Package strictjson reads operators' JSON bodies refusing every member the target has no field for, at any
// depth, and names each by its path ("botProtection.baseDificulty", "halls[0].rows[1].seat"). encoding/json
// skips unknown members, so a misspelt setting would answer 200 and change nothing; Decoder.DisallowUnknownFields
// refuses it but names neither where it is nor the others. The check parses the body a second time: it is for
// the operators' writes, never a fan's hot body (shared/holdbody).
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// UnknownFieldError names every member of a body that its target has no field for, sorted.
type UnknownFieldError struct {
	Paths []string
}

func (e *UnknownFieldError) Error() string {
	if len(e.Paths) == 1 {
		return "unknown field " + e.Paths[0] + ": this request has no such field"
	}
	return "unknown fields " + strings.Join(e.Paths, ", ") + ": this request has no such fields"
}

// Unmarshal is json.Unmarshal that first refuses, with an *UnknownFieldError, any member v has no field for;
// then v is untouched. Malformed JSON and wrong types are json.Unmarshal's own errors.
func Unmarshal(b []byte, v any) error { return UnmarshalAt("", b, v) }

// UnmarshalAt is Unmarshal for the member at path of a larger body (one kept as json.RawMessage to be applied
// onto values in force), whose unknown members it names under path.
func UnmarshalAt(path string, b []byte, v any) error {
	// The tree keeps numbers as written (UseNumber): only its members' names matter here, and a number no Go
	// type can hold (1e999) is for json.Unmarshal below to refuse as the member's own error.
	var tree any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return json.Unmarshal(b, v)
	}
	var unknown []string
	walk(path, tree, reflect.TypeOf(v), &unknown)
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return &UnknownFieldError{Paths: unknown}
	}
	return json.Unmarshal(b, v)
}

var (
	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walk follows val down t as encoding/json would decode it, adding the path of every member t has no field for.
// A value of the wrong shape is left to json.Unmarshal to refuse; a type that decodes itself (json.RawMessage,
// time.Time) is its own judge.
func walk(path string, val any, t reflect.Type, unknown *[]string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := val.(map[string]any)
		for k, v := range obj {
			ft, ok := field(t, k)
			if !ok {
				*unknown = append(*unknown, join(path, k))
				continue
			}
			walk(join(path, k), v, ft, unknown)
		}
	case reflect.Map:
		obj, _ := val.(map[string]any)
		for k, v := range obj {
			walk(join(path, k), v, t.Elem(), unknown)
		}
	case reflect.Slice, reflect.Array:
		arr, _ := val.([]any)
		for i, v := range arr {
			walk(path+"["+strconv.Itoa(i)+"]", v, t.Elem(), unknown)
		}
	}
}

// field finds the type of struct t's field that encoding/json decodes member name into: by its json tag or Go
// name, an exact match first, then one differing only in case (as encoding/json matches), fields of embedded
// structs promoted.
func field(t reflect.Type, name string) (reflect.Type, bool) {
	var folded reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" && f.Tag.Get("json") == "-" {
			continue
		}
		ft := f.Type
		if f.Anonymous && tag == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if got, ok := field(ft, name); ok {
					return got, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
		if folded == nil && strings.EqualFold(tag, name) {
			folded = f.Type
		}
	}
	return folded, folded != nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
