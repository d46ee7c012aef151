package megashow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/shared/token"
)

// PartSpec is one part of the streaming crowd: fans First..First+Count-1 join through the edge at Base (solving
// the show's proofs of work) and then each holds the show's event stream there until the part is stopped.
type PartSpec struct {
	Index      int           `json:"index"`
	Base       string        `json:"base"`
	Show       string        `json:"show"`
	RunID      string        `json:"runId"`
	AuthSecret string        `json:"authSecret"`
	First      int           `json:"first"`
	Count      int           `json:"count"`
	Sources    []string      `json:"sources"` // loopback source addresses the part's connections come from
	Workers    int           `json:"workers"` // joins in flight
	Timeout    time.Duration `json:"timeout"`
}

// Progress is what a part says while it plays.
type Progress struct {
	Joined    int `json:"joined"`
	Streaming int `json:"streaming"` // streams that have told their fan a position
	Failed    int `json:"failed"`    // joins that ended without a place
	Admitted  int `json:"admitted"`  // admitted events received
}

// FanRecord is one streaming fan's observations, times in Unix milliseconds of this machine's clock.
type FanRecord struct {
	ID      int   `json:"id"`
	SentMs  int64 `json:"sent"` // the first join request went out (before its proof of work)
	DoneMs  int64 `json:"done"` // the join answered with a place
	JoinPos int   `json:"joinPos"`
	// Pos is the last position the stream told while admission was paused; Ticket the ticket of its event id.
	Pos    int   `json:"pos"`
	Ticket int64 `json:"ticket"`
	// Admitted counts admitted events; the first one's arrival, its token's iat (seconds) and jti follow.
	Admitted   int    `json:"admitted,omitempty"`
	AdmittedMs int64  `json:"admittedMs,omitempty"`
	Iat        int64  `json:"iat,omitempty"`
	JTI        string `json:"jti,omitempty"`
	Reconnects int    `json:"reconnects,omitempty"`
	Err        string `json:"err,omitempty"` // why the fan has no place or no stream
}

// PartResult is a stopped part's record.
type PartResult struct {
	Fans       []FanRecord    `json:"fans"`
	Hashes     int64          `json:"hashes"`
	SolveMs    int64          `json:"solveMs"`
	Solved     int64          `json:"solved"`
	JoinStatus map[string]int `json:"joinStatus"` // the join's outcomes by status
}

// Play runs one part until ctx ends, telling report of its progress every half second, and returns its record.
// Every fan of the part joins through the edge with a user token minted here with the platform's secret (the
// guest route is not the subject; each fan is its own user), solves the join's proof of work on this process's
// cores, and opens its stream as the queue page does: GET /queue/{show}/events?access_token=….
func Play(ctx context.Context, spec PartSpec, report func(Progress)) (PartResult, error) {
	users, err := token.NewUserIssuer([]byte(spec.AuthSecret))
	if err != nil {
		return PartResult{}, err
	}
	var sources []net.IP
	for _, s := range spec.Sources {
		if ip := net.ParseIP(s); ip != nil {
			sources = append(sources, ip)
		}
	}
	tr := client.NewTransport(spec.Workers+16, sources...)
	defer tr.CloseIdleConnections()
	c, err := client.New(spec.Base, tr, client.Options{Timeout: spec.Timeout})
	if err != nil {
		return PartResult{}, err
	}
	u, _ := url.Parse(spec.Base)
	st := &streamer{host: u.Host, show: spec.Show, sources: sources}

	fans := make([]FanRecord, spec.Count)
	var joined, streaming, failed atomic.Int64
	statuses := map[string]int{}
	var mu sync.Mutex
	var streams sync.WaitGroup
	next := make(chan int)
	var workers sync.WaitGroup
	for range max(1, spec.Workers) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range next {
				f := &fans[i]
				f.ID = spec.First + i
				user := fmt.Sprintf("ms-%s-%d", spec.RunID, f.ID)
				tok, err := users.Issue(user, time.Now(), 6*time.Hour)
				if err != nil {
					f.Err = err.Error()
					failed.Add(1)
					continue
				}
				f.SentMs = time.Now().UnixMilli()
				q, res, err := c.Join(ctx, tok, spec.Show, "")
				f.DoneMs = time.Now().UnixMilli()
				mu.Lock()
				statuses[client.Outcome(res, err)]++
				mu.Unlock()
				if err != nil || res.Status != http.StatusOK || q.Status != "waiting" {
					f.Err = fmt.Sprintf("join: %s %s", client.Outcome(res, err), q.Status)
					failed.Add(1)
					continue
				}
				f.JoinPos = q.Position
				joined.Add(1)
				streams.Add(1)
				go func() {
					defer streams.Done()
					st.follow(ctx, tok, f, func() { streaming.Add(1) })
				}()
			}
		}()
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	progress := func() {
		report(Progress{Joined: int(joined.Load()), Streaming: int(streaming.Load()), Failed: int(failed.Load()),
			Admitted: int(st.admitted.Load())})
	}
	go func() {
		defer close(next)
		for i := range fans {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { workers.Wait(); streams.Wait(); close(done) }()
loop:
	for {
		select {
		case <-tick.C:
			progress()
		case <-done:
			break loop
		}
	}
	progress()
	hashes, took, solved := c.Work.Snapshot()
	return PartResult{Fans: fans, Hashes: hashes, SolveMs: took.Milliseconds(), Solved: solved, JoinStatus: statuses}, nil
}

// streamer opens event streams as bare HTTP/1.1 requests on connections of their own: one goroutine and 1.5 KB
// of buffers a stream, where net/http's transport spends two goroutines and 8 KB on each, so that a generator
// process holds its share of a hundred thousand streams in little memory. Nothing is rendered.
type streamer struct {
	admitted atomic.Int64 // admitted events received
	host     string
	show     string
	sources  []net.IP
	n        atomic.Uint64
}

// follow holds f's stream until ctx ends or the fan is admitted (the server then ends it), reconnecting with
// Last-Event-ID when a stream drops. ready is called once, at the first position.
func (s *streamer) follow(ctx context.Context, tok string, f *FanRecord, ready func()) {
	path := "/queue/" + url.PathEscape(s.show) + "/events?access_token=" + url.QueryEscape(tok)
	var told bool
	var last string
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			f.Reconnects++
			if attempt > 8 {
				f.Err = "stream: gave up after 8 reconnects"
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			}
		}
		end, id, err := s.once(ctx, path, last, f, func() {
			if !told {
				told = true
				ready()
			}
		})
		last = id
		if end || ctx.Err() != nil {
			return
		}
		if err != nil {
			f.Err = "stream: " + err.Error()
		}
	}
}

// once reads one connection's events; end says the stream ended for good (admitted).
func (s *streamer) once(ctx context.Context, path, lastID string, f *FanRecord, positioned func()) (end bool, id string, err error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if len(s.sources) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: s.sources[s.n.Add(1)%uint64(len(s.sources))]}
	}
	conn, err := d.DialContext(ctx, "tcp", s.host)
	if err != nil {
		return false, lastID, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + s.host + "\r\nAccept: text/event-stream\r\n"
	if lastID != "" {
		req += "Last-Event-ID: " + lastID + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		return false, lastID, err
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return false, lastID, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests, lastID,
			fmt.Errorf("status %d", resp.StatusCode)
	}
	body := bufio.NewReaderSize(resp.Body, 512)
	var kind, data []byte
	id = lastID
	for {
		line, err := body.ReadSlice('\n')
		if err != nil {
			return false, id, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(kind) > 0 && s.event(string(kind), data, id, f, positioned) {
				return true, id, nil
			}
			kind, data = kind[:0], data[:0]
		case bytes.HasPrefix(line, []byte("event: ")):
			kind = append(kind[:0], line[7:]...)
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data[:0], line[6:]...)
		case bytes.HasPrefix(line, []byte("id: ")):
			id = string(line[4:])
		}
	}
}

// event records one event; true when it is the verdict that ends the stream.
func (s *streamer) event(kind string, data []byte, id string, f *FanRecord, positioned func()) bool {
	switch kind {
	case "position":
		// {"position":N,"etaSeconds":E,"paused":B}, as the waiting room formats it; id p-<ticket>-<cursor>[-p].
		if !bytes.Contains(data, []byte(`"paused":true`)) {
			return false // admission runs: the paused positions are the ones judged
		}
		// Only positions from before the first admission (the line's cursor still 0) are judged: once the
		// line has moved, a paused position is a smaller one again.
		ticket, rest, _ := strings.Cut(strings.TrimPrefix(id, "p-"), "-")
		if cursor, _, _ := strings.Cut(rest, "-"); cursor != "0" {
			return false
		}
		var p struct {
			Position int `json:"position"`
		}
		if json.Unmarshal(data, &p) == nil && p.Position > 0 {
			f.Pos = p.Position
			f.Ticket, _ = strconv.ParseInt(ticket, 10, 64)
			positioned()
		}
	case "admitted":
		f.Admitted++
		if f.Admitted > 1 {
			return true
		}
		f.AdmittedMs = time.Now().UnixMilli()
		s.admitted.Add(1)
		var a struct {
			Token string `json:"admissionToken"`
		}
		_ = json.Unmarshal(data, &a)
		if parts := strings.Split(a.Token, "."); len(parts) == 3 {
			var claims struct {
				Iat int64  `json:"iat"`
				JTI string `json:"jti"`
			}
			if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Unmarshal(b, &claims) == nil {
				f.Iat, f.JTI = claims.Iat, claims.JTI
			}
		}
		return true
	case "sold_out", "closed":
		f.Err = "stream: " + kind
		return true
	}
	return false
}
