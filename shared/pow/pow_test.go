package pow

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func issuer(t testing.TB) *Issuer {
	t.Helper()
	is, err := NewIssuer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func solved(t testing.TB, is *Issuer, terms Terms, now time.Time) (Challenge, string) {
	t.Helper()
	c, err := is.Issue(terms, now)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := Solve(c, 2, nil)
	if !ok {
		t.Fatal("no solution found")
	}
	return c, Encode(c, n, 5*time.Millisecond)
}

func TestVerify(t *testing.T) {
	is := issuer(t)
	now := time.Now()
	terms := Terms{Scope: ShowScope("s1"), Identity: "u1", MaxNumber: 5000, TTL: time.Minute}
	c, good := solved(t, is, terms, now)

	tamper := func(f func(p *payload)) string {
		b, _ := base64.StdEncoding.DecodeString(good)
		var p payload
		_ = json.Unmarshal(b, &p)
		f(&p)
		b, _ = json.Marshal(p)
		return base64.StdEncoding.EncodeToString(b)
	}
	other, err := NewIssuer([]byte(strings.Repeat("x", 32)))
	if err != nil {
		t.Fatal(err)
	}
	_, foreign := solved(t, other, terms, now)

	for _, tc := range []struct {
		name            string
		raw, scope, who string
		at              time.Time
		want            error
	}{
		{"good", good, ShowScope("s1"), "u1", now, nil},
		{"wrong number", tamper(func(p *payload) { p.Number++ }), ShowScope("s1"), "u1", now, ErrForged},
		{"forged signature", tamper(func(p *payload) { p.Signature = strings.Repeat("0", 64) }), ShowScope("s1"), "u1", now, ErrForged},
		{"salt changed", tamper(func(p *payload) { p.Salt = strings.Replace(p.Salt, "s1", "s2", 1) }), ShowScope("s2"), "u1", now, ErrForged},
		{"another key", foreign, ShowScope("s1"), "u1", now, ErrForged},
		{"expired", good, ShowScope("s1"), "u1", now.Add(2 * time.Minute), ErrExpired},
		{"other show", good, ShowScope("s2"), "u1", now, ErrWrongScope},
		{"other identity", good, ShowScope("s1"), "u2", now, ErrWrongIdentity},
		{"not base64", "%%%", ShowScope("s1"), "u1", now, ErrMalformed},
		{"not json", base64.StdEncoding.EncodeToString([]byte("{")), ShowScope("s1"), "u1", now, ErrMalformed},
		{"empty", "", ShowScope("s1"), "u1", now, ErrMalformed},
		{"too long", strings.Repeat("A", MaxPayload+4), ShowScope("s1"), "u1", now, ErrMalformed},
		{"other algorithm", tamper(func(p *payload) { p.Algorithm = "SHA-1" }), ShowScope("s1"), "u1", now, ErrMalformed},
		{"negative number", tamper(func(p *payload) { p.Number = -1 }), ShowScope("s1"), "u1", now, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := is.Verify(tc.raw, tc.scope, tc.who, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: got %v, want %v", err, tc.want)
			}
			if err == nil && (s.ID != c.Challenge || s.MaxNumber != 5000 || s.Scope != ShowScope("s1")) {
				t.Fatalf("solution: got %+v", s)
			}
		})
	}
}

func TestGuestScopeHasNoIdentity(t *testing.T) {
	is := issuer(t)
	_, raw := solved(t, is, Terms{Scope: GuestScope, MaxNumber: 100, TTL: time.Minute}, time.Now())
	if _, err := is.Verify(raw, GuestScope, "", time.Now()); err != nil {
		t.Fatalf("guest solution: %v", err)
	}
	if _, err := is.Verify(raw, GuestScope, "u1", time.Now()); !errors.Is(err, ErrWrongIdentity) {
		t.Fatalf("guest solution for a user: got %v, want ErrWrongIdentity", err)
	}
}

func TestSolveStops(t *testing.T) {
	is := issuer(t)
	c, _ := is.Issue(Terms{Scope: "x", MaxNumber: 1 << 40, TTL: time.Minute}, time.Now())
	stop := make(chan struct{})
	time.AfterFunc(50*time.Millisecond, func() { close(stop) })
	start := time.Now()
	if _, ok := Solve(c, 2, stop); ok && time.Since(start) > time.Second {
		t.Fatal("Solve ignored stop")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Solve took %v after stop", d)
	}
}

func TestSolveRefusesForeign(t *testing.T) {
	if _, ok := Solve(Challenge{Algorithm: Algorithm, Challenge: strings.Repeat("ab", 32), MaxNumber: 1000, Salt: "x"}, 2, nil); ok {
		t.Fatal("solved a challenge with no solution")
	}
}

// BenchmarkVerify is the server's cost of one solution, as this process's CPU time (which other processes on a
// busy machine barely move, unlike ns/op).
func BenchmarkVerify(b *testing.B) {
	is := issuer(b)
	now := time.Now()
	_, raw := solved(b, is, Terms{Scope: ShowScope("s1"), Identity: "u1", MaxNumber: 1000, TTL: time.Minute}, now)
	scope := ShowScope("s1")
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		if _, err := is.Verify(raw, scope, "u1", now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSolve reports the hashes per second a native client reaches on this machine: with one worker, as one
// fan's device solves (a core of it), and with every core, as a script spending the whole machine on one place.
func BenchmarkSolve(b *testing.B) {
	all := []int{1}
	if n := runtime.NumCPU(); n > 1 {
		all = append(all, n)
	}
	for _, workers := range all {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			is := issuer(b)
			c, _ := is.Issue(Terms{Scope: "x", MaxNumber: 1 << 40, TTL: time.Minute}, time.Now())
			c.MaxNumber = int64(b.N) * 1000
			b.ResetTimer()
			start := time.Now()
			// Searching a range with no answer tries every number: exactly MaxNumber+1 hashes.
			c.Challenge = strings.Repeat("00", 32)
			Solve(c, workers, nil)
			b.ReportMetric(float64(c.MaxNumber+1)/time.Since(start).Seconds()/1e6, "Mhash/s")
		})
	}
}
