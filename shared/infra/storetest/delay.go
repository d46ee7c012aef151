package storetest

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a TCP proxy in front of a real store that makes it slow, in either or both of two ways; the
// store's answers always come back at once.
//
// A delay (SetDelay) is latency, as a distant network's: every chunk a client sends reaches the store the delay
// after the proxy read it. Chunks in flight wait side by side (each has its own due time), so a client's
// pipelining and a pool's parallel connections are slowed no more than one round trip, however many there are.
//
// A service time (SetServiceTime) is a throughput cap, as a saturated server's: chunks from every connection pass
// one at a time through a single lane, each taking the service time (due = max(now, the previous chunk's due) +
// the service time). Below the lane's capacity (one chunk per service time) a round trip costs about the service
// time; above it chunks queue, and latency grows for as long as the load stays over the capacity. Less load is
// then the only cure, which a fixed delay never gives.
type DelayProxy struct {
	Addr string // host:port clients dial instead of the store's

	target  string
	ln      net.Listener
	delay   atomic.Int64  // nanoseconds
	service atomic.Int64  // nanoseconds; 0: no lane
	chunks  atomic.Uint64 // chunks clients sent, for a test to read the store's load

	lane    sync.Mutex
	laneDue time.Time // when the lane's latest chunk is done

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartDelayProxy starts a proxy to the store at target (host:port) on a free loopback port, with no delay until
// SetDelay. It closes every connection and stops when the test ends.
func StartDelayProxy(t TB, target string) *DelayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("storetest: delay proxy: %v", err)
	}
	p := &DelayProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// SetDelay sets how long each chunk a client sends from now on waits before the store gets it; 0 forwards at once.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// Delay is the delay in force.
func (p *DelayProxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// SetServiceTime sets how long each chunk a client sends from now on occupies the single lane all connections
// share: the store then takes at most one chunk per d, from every client together. 0 removes the lane; chunks
// already queued in it keep their due times.
func (p *DelayProxy) SetServiceTime(d time.Duration) { p.service.Store(int64(max(d, 0))) }

// ServiceTime is the lane's service time in force (0: no lane).
func (p *DelayProxy) ServiceTime() time.Duration { return time.Duration(p.service.Load()) }

// Chunks counts the chunks clients have sent through the proxy (a Redis command or a pipeline is usually one).
func (p *DelayProxy) Chunks() uint64 { return p.chunks.Load() }

// due is when a chunk read at now is to reach the store: after the delay, then, with a lane, after the chunks
// ahead of it in the lane and its own service time.
func (p *DelayProxy) due(now time.Time) time.Time {
	p.chunks.Add(1)
	due := now.Add(p.Delay())
	d := p.ServiceTime()
	if d == 0 {
		return due
	}
	p.lane.Lock()
	defer p.lane.Unlock()
	if p.laneDue.After(due) {
		due = p.laneDue
	}
	p.laneDue = due.Add(d)
	return p.laneDue
}

// Close stops accepting, closes every connection both ways and waits for the proxy's goroutines. It is safe to
// call more than once.
func (p *DelayProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records c to be closed by Close; false when the proxy is already closing (c is then closed here).
func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *DelayProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a client that gave up before it was accepted; keep serving the others
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// chunk is bytes a client sent and when the store is to get them.
type chunk struct {
	b   []byte
	due time.Time
}

// serve pipes one client connection to a connection of its own to the store. Three goroutines: the reader stamps
// each chunk from the client with its due time, the writer hands chunks to the store in order once due, and the
// answers are copied back undelayed. When any of them ends, the pair is closed, which ends the others.
func (p *DelayProxy) serve(client net.Conn) {
	defer p.wg.Done()
	store, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(store) {
		if store != nil && err == nil {
			_ = store.Close()
		}
		_ = client.Close()
		p.untrack(client)
		return
	}
	done := make(chan struct{})
	var once sync.Once
	end := func() {
		once.Do(func() {
			close(done)
			_ = client.Close()
			_ = store.Close()
		})
	}
	defer p.untrack(client, store)

	// A bounded queue: a client far ahead of a slow store waits for room, as it would on a full socket buffer.
	chunks := make(chan chunk, 64)
	var pipes sync.WaitGroup
	pipes.Add(3)
	go func() { // client -> queue
		defer pipes.Done()
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := client.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{b: buf[:n], due: p.due(time.Now())}:
				case <-done:
					return
				}
			}
			if err != nil {
				end()
				return
			}
		}
	}()
	go func() { // queue -> store, each chunk once due
		defer pipes.Done()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for c := range chunks {
			if wait := time.Until(c.due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-done:
					return
				}
			}
			if _, err := store.Write(c.b); err != nil {
				end()
				return
			}
		}
	}()
	go func() { // store -> client, undelayed
		defer pipes.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := store.Read(buf)
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					end()
					return
				}
			}
			if err != nil {
				end()
				return
			}
		}
	}()
	pipes.Wait()
}
