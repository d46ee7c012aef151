package ticket_test

import (
	"testing"
	"time"
)

// BenchmarkVerify: a rotating code checked on the gate kit alone (two Ed25519 verifications) against a static
// code (one), in the same run; the rotating case reports its cost as a ratio of the static one.
func BenchmarkVerify(b *testing.B) {
	s, v1 := newSigner(b)
	static, _ := s.Sign(realTicket, realShow, "J20")
	code := newHolder(b, s).Stamp(t0)
	kit := kitOf(s, map[string]bool{realTicket: true})
	var staticNs float64
	b.Run("static", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := v1.Verify(static); err != nil {
				b.Fatal(err)
			}
		}
		staticNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("rotating-kit", func(b *testing.B) {
		now := t0.Add(10 * time.Second)
		for i := 0; i < b.N; i++ {
			if _, err := kit.Verify(code, now); err != nil {
				b.Fatal(err)
			}
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if staticNs > 0 {
			b.ReportMetric(ns/staticNs, "x-static")
		}
	})
}

// BenchmarkDoorDevice: how many rotating codes one door device checks a second on one core, offline, with a
// kit of 5,000 tickets, each code a different ticket's.
func BenchmarkDoorDevice(b *testing.B) {
	s, _ := newSigner(b)
	const n = 5000
	tickets := make(map[string]bool, n)
	codes := make([]string, 0, 64)
	for i := 0; i < n; i++ {
		id := "tk_" + hex32(i)
		tickets[id] = true
		if len(codes) < cap(codes) {
			h, err := s.Certify(id, realShow, "A1", t0.Add(24*time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			codes = append(codes, h.Stamp(t0))
		}
	}
	kit := kitOf(s, tickets)
	now := t0.Add(3 * time.Second)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := kit.Verify(codes[i%len(codes)], now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "codes/s")
}

func hex32(i int) string {
	const digits = "0123456789abcdef"
	out := []byte("00000000000000000000000000000000")
	for p := len(out) - 1; i > 0; p-- {
		out[p] = digits[i%16]
		i /= 16
	}
	return string(out)
}
