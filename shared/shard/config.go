package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one database of DATABASE_SHARDS.
type Shard struct {
	Name string // its place on the ring; stable across restarts and additions
	URL  string // a PostgreSQL URL, possibly multi-host (postgres://h1,h2/db?target_session_attrs=read-write)
}

// Parse reads DATABASE_SHARDS: shards separated by whitespace or ';' (a multi-host URL has commas of its own),
// each "name=URL" or a bare URL, which is named by its position ("s1", "s2", ...). Names matter: the ring places
// shows by name, so a shard renamed would lose its shows; give names when a list may be reordered.
func Parse(s string) ([]Shard, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ' ' || r == '\n' || r == '\t' })
	if len(fields) == 0 {
		return nil, nil
	}
	out := make([]Shard, 0, len(fields))
	seen := map[string]bool{}
	for i, f := range fields {
		sh := Shard{Name: "s" + strconv.Itoa(i+1), URL: f}
		if eq := strings.IndexByte(f, '='); eq > 0 && !strings.Contains(f[:eq], ":") && !strings.Contains(f[:eq], "/") {
			sh.Name, sh.URL = f[:eq], f[eq+1:]
		}
		if !strings.HasPrefix(sh.URL, "postgres://") && !strings.HasPrefix(sh.URL, "postgresql://") {
			return nil, fmt.Errorf("DATABASE_SHARDS: shard %s is not a postgres:// URL", sh.Name)
		}
		if seen[sh.Name] {
			return nil, fmt.Errorf("DATABASE_SHARDS: shard name %s repeated", sh.Name)
		}
		seen[sh.Name] = true
		out = append(out, sh)
	}
	return out, nil
}

// Names lists the shards' names in order, for New.
func Names(shards []Shard) []string {
	names := make([]string, len(shards))
	for i, s := range shards {
		names[i] = s.Name
	}
	return names
}
