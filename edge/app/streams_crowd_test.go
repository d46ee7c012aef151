package app

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/token"
)

// crowdFan is one of BenchmarkStreams's fans: their connection, the position they last heard, and when they
// first heard one lower than the mark.
type crowdFan struct {
	c       net.Conn
	last    atomic.Int64
	mark    atomic.Int64
	movedAt atomic.Int64 // unix ns; 0: not yet
}

var (
	positionKey = []byte(`"position":`)
	eventKey    = []byte("\nevent: ")
	// crowdEvents counts the events every fan has read since the crowd connected, for the CPU per event.
	crowdEvents atomic.Int64
)

// read follows the stream to its end, noting positions; an admission counts as news too.
func (f *crowdFan) read(alive *atomic.Int64) {
	alive.Add(1)
	defer alive.Add(-1)
	buf := make([]byte, 512)
	for {
		k, err := f.c.Read(buf)
		if k > 0 {
			f.note(buf[:k])
		}
		if err != nil {
			return
		}
	}
}

// note records what one read brought. A read may cut an event in two; a position cut there is read with the
// next refresh, a second later at most, which the measurement would show.
func (f *crowdFan) note(b []byte) {
	// Each event is one write of the edge, so a read cuts one in two only when the fan falls behind.
	crowdEvents.Add(int64(bytes.Count(b, eventKey)))
	if bytes.Contains(b, []byte("event: admitted")) {
		f.moved()
	}
	for {
		i := bytes.Index(b, positionKey)
		if i < 0 {
			return
		}
		b = b[i+len(positionKey):]
		j := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == len(b) {
			return
		}
		p, _ := strconv.ParseInt(string(b[:j]), 10, 64)
		f.last.Store(p)
		if m := f.mark.Load(); m > 0 && p < m {
			f.moved()
		}
	}
}

func (f *crowdFan) moved() { f.movedAt.CompareAndSwap(0, time.Now().UnixNano()) }

// TestStreamCrowd is BenchmarkStreams's crowd, run in a child process: EDGE_N fans each open a stream and wait
// for their first position, then keep reading. On MARK (stdin) each notes its position; on MOVED <unix ns> the
// crowd reports how long after that instant each stream heard a lower one; on ALIVE it reports how many streams
// are still open; WINDOW starts a measuring window and WINDOWED ends it, reporting the events read in it and this
// process's CPU time (user + system) over it. It ends when stdin closes.
func TestStreamCrowd(t *testing.T) {
	if os.Getenv("EDGE_STREAM_CROWD") != "1" {
		t.Skip("the crowd of BenchmarkStreams")
	}
	raiseNoFile(t)
	n, _ := strconv.Atoi(os.Getenv("EDGE_N"))
	addr := strings.TrimPrefix(os.Getenv("EDGE_BASE"), "http://")
	show := os.Getenv("EDGE_SHOW")
	is, err := token.NewUserIssuer([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	var mu sync.Mutex
	var fans []*crowdFan
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d := net.Dialer{Timeout: 10 * time.Second,
				LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+(i/20000)), byte(2+(i/10000)%250))}}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				failed.Add(1)
				return
			}
			tok, _ := is.Issue("crowd-"+strconv.Itoa(i), time.Now(), time.Hour)
			fmt.Fprintf(c, "GET /queue/%s/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n"+
				"Authorization: Bearer %s\r\n\r\n", show, tok)
			f := &crowdFan{c: c}
			buf := make([]byte, 1024)
			var got []byte
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			for !bytes.Contains(got, []byte("event: position")) {
				k, err := c.Read(buf)
				if err != nil {
					failed.Add(1)
					c.Close()
					return
				}
				got = append(got, buf[:k]...)
			}
			_ = c.SetReadDeadline(time.Time{})
			f.note(got)
			mu.Lock()
			fans = append(fans, f)
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Printf("CONNECTED %d %d\n", len(fans), failed.Load())
	var alive atomic.Int64
	for _, f := range fans {
		go f.read(&alive)
	}
	in := bufio.NewScanner(os.Stdin)
	var events0 int64
	var cpu0 time.Duration
	var at0 time.Time
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "MARK":
			for _, f := range fans {
				f.mark.Store(f.last.Load())
			}
			fmt.Println("MARKED")
		case "MOVED":
			t0, _ := strconv.ParseInt(arg, 10, 64)
			fmt.Println(updated(fans, t0))
		case "ALIVE":
			fmt.Printf("ALIVE %d\n", alive.Load())
		case "WINDOW":
			events0, cpu0, at0 = crowdEvents.Load(), cpuTime(), time.Now()
			fmt.Println("WINDOW")
		case "WINDOWED":
			fmt.Printf("WINDOWED %d %d %d\n", crowdEvents.Load()-events0, cpuTime()-cpu0, time.Since(at0))
		}
	}
	for _, f := range fans {
		f.c.Close()
	}
}

// updated waits (10 s at most) until every fan has heard a position lower than their mark and reports how long
// after t0 they did: "UPDATED seen total first p50 p99 max", in milliseconds.
func updated(fans []*crowdFan, t0 int64) string {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		missing := 0
		for _, f := range fans {
			if f.movedAt.Load() == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var d []time.Duration
	for _, f := range fans {
		if at := f.movedAt.Load(); at > 0 {
			d = append(d, time.Duration(at-t0))
		}
	}
	slices.Sort(d)
	q := func(p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(d[int(float64(len(d)-1)*p)]) / 1e6
	}
	return fmt.Sprintf("UPDATED %d %d %f %f %f %f", len(d), len(fans), q(0), q(.5), q(.99), q(1))
}
