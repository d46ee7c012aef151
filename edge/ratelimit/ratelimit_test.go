package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	t.Parallel()
	l := New(2, 3, 1000)
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := l.Allow("a", now); !ok {
			t.Fatalf("burst request %d refused", i)
		}
	}
	ok, wait := l.Allow("a", now)
	if ok || wait <= 0 || wait > 500*time.Millisecond {
		t.Fatalf("over burst: ok=%v wait=%v, want refused with wait in (0, 500ms]", ok, wait)
	}
	if ok, _ := l.Allow("b", now); !ok {
		t.Fatal("another key was limited by a's bucket")
	}
	// Refusals do not dig the bucket deeper: after the announced wait one request passes.
	for i := 0; i < 10; i++ {
		l.Allow("a", now)
	}
	if ok, _ := l.Allow("a", now.Add(wait)); !ok {
		t.Fatal("refused after the announced wait")
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	l := New(0, 1, 10)
	for i := 0; i < 100; i++ {
		if ok, _ := l.Allow("a", time.Now()); !ok {
			t.Fatal("a disabled limiter refused")
		}
	}
	var nl *Limiter
	if nl.Enabled() {
		t.Fatal("nil limiter enabled")
	}
}

func TestBoundedKeys(t *testing.T) {
	t.Parallel()
	const maxKeys = 2048
	l := New(1, 1, maxKeys)
	now := time.Now()
	for i := 0; i < 100*maxKeys; i++ {
		l.Allow(strconv.Itoa(i), now)
	}
	if n := l.Len(); n > maxKeys+2*shards {
		t.Fatalf("holds %d keys, bound %d", n, maxKeys)
	}
	// A key in steady use survives the churn of others.
	l.Allow("hot", now)
	for i := 0; i < 10*maxKeys; i++ {
		l.Allow("cold"+strconv.Itoa(i), now)
		if i%64 == 0 {
			if ok, _ := l.Allow("hot", now); ok && i > 0 {
				t.Fatalf("hot key's bucket was evicted and refilled at i=%d", i)
			}
		}
	}
}
