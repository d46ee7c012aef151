package waitroom

import (
	"sync"
	"time"
)

// RateMeter measures how fast a show's cursor advances (fans taken off the queue per second, admitted or
// skipped), from the tick results a replica reads each tick. Positions are counted in the same unit, so
// position / rate is the honest ETA. It keeps a bounded ring of samples; memory does not grow with time.
type RateMeter struct {
	mu      sync.Mutex
	window  time.Duration
	samples []sample // ring, oldest first after trimming
}

type sample struct {
	at     time.Time
	cursor int64
}

// NewRateMeter measures over window (for example 30 s).
func NewRateMeter(window time.Duration) *RateMeter {
	return &RateMeter{window: window}
}

// Observe records the cursor at a time. Samples arrive at each tick; one per 250 ms is kept.
func (m *RateMeter) Observe(at time.Time, cursor int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.samples); n > 0 {
		last := m.samples[n-1]
		if cursor < last.cursor { // the queue was reset (keys deleted): start over
			m.samples = m.samples[:0]
		} else if at.Sub(last.at) < 250*time.Millisecond {
			return
		}
	}
	m.samples = append(m.samples, sample{at: at, cursor: cursor})
	cut := 0
	for cut < len(m.samples)-2 && at.Sub(m.samples[cut].at) > m.window {
		cut++
	}
	if cut > 0 {
		m.samples = append(m.samples[:0], m.samples[cut:]...)
	}
}

// Rate is fans per second over the window; ok is false until two seconds of samples show movement.
func (m *RateMeter) Rate() (rate float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) < 2 {
		return 0, false
	}
	first, last := m.samples[0], m.samples[len(m.samples)-1]
	d := last.at.Sub(first.at)
	if d < 2*time.Second || last.cursor == first.cursor {
		return 0, false
	}
	return float64(last.cursor-first.cursor) / d.Seconds(), true
}

// ETA is the expected wait for a fan at position, at the measured rate, falling back to the configured rate
// (the ceiling the queue can reach) before anything has been measured.
func ETA(position int64, measured float64, measuredOK bool, configured float64) time.Duration {
	if position <= 0 {
		return 0
	}
	r := configured
	if measuredOK && measured > 0 {
		r = measured
	}
	if r <= 0 {
		return 0
	}
	return time.Duration(float64(position) / r * float64(time.Second))
}
