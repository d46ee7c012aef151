package main

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
)

// A crowd split over processes (-procs): one process cannot hold a stadium's waiting fans, whose event streams
// take a descriptor each, under an open-file limit that cannot be raised (20,000 on the development machine, soft
// and hard). The parent sets the show up, samples the operator's counters, and runs this binary again once per
// share with childFlag and a childSpec; each child plays its fans against one edge replica from its own block of
// loopback source addresses, and writes what it recorded (a loadtest.Part, gob) to its stdout. The parent merges
// the parts into one run: one fairness check over every fan, since tickets and admission times come from the one
// waiting room whatever process or replica a fan went through.

// childFlag, followed by a childSpec in JSON, makes run play one share of a split crowd. It is not listed by -h:
// only a parent passes it.
const childFlag = "-child"

// maxProcs bounds -procs: each child takes a block 127.0.N.* of source addresses, N from 1.
const maxProcs = 254

// childSpec is everything a child needs; the parent fills Base, Block and Share per child.
type childSpec struct {
	Bases    []string          `json:"bases,omitempty"` // the parent's list; a child gets one in Base
	Base     string            `json:"base"`
	Scenario loadtest.Scenario `json:"scenario"`
	Share    crowd.Share       `json:"share"`
	Block    int               `json:"block"`   // the child's sources are 127.0.Block.1..Sources
	Sources  int               `json:"sources"` // 1: the kernel's choice of source
	Timeout  time.Duration     `json:"timeout"`
	MaxConns int               `json:"maxConns"`
	Verbose  bool              `json:"verbose"`
	Profile  string            `json:"profile,omitempty"` // -profile's directory: the child writes cpu-child-N.pprof there
}

// fileNeed is the open-file limit a process playing fans needs: a stream per waiting fan, a keep-alive
// connection per fan booking, and room for the rest.
func fileNeed(fans int) uint64 { return uint64(fans)*5/4 + 1024 }

// checkShareFits refuses a split whose largest share needs more descriptors than a process may open.
func checkShareFits(fans, procs int) error {
	limit := fileLimit()
	share := (fans + procs - 1) / procs
	if limit > 0 && fileNeed(share) > limit {
		return fmt.Errorf("%d fans in %d processes is %d each, which needs %d open files; the limit is %d: use more -procs",
			fans, procs, share, fileNeed(share), limit)
	}
	return nil
}

// children returns the Split's player: each share runs in a child process of this executable, on the next base
// URL and its own source block, and its part is read back from the child's stdout. The children's logs go to
// stderr; the CPU time and peak RSS of each, to log.
func children(spec childSpec, stderr io.Writer, log *slog.Logger) func(context.Context, crowd.Share) (*loadtest.Part, error) {
	var next atomic.Int64
	logs := &lockedWriter{w: stderr}
	return func(ctx context.Context, s crowd.Share) (*loadtest.Part, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		i := int(next.Add(1) - 1)
		cs := spec
		cs.Bases, cs.Base, cs.Block, cs.Share = nil, spec.Bases[i%len(spec.Bases)], i+1, s
		b, err := json.Marshal(cs)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, exe, childFlag, string(b))
		// The run's end asks a child to finish as a Ctrl-C would: its fans end as cut off and it still reports.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 30 * time.Second
		cmd.Stderr = logs
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		var part loadtest.Part
		derr := gob.NewDecoder(out).Decode(&part)
		if derr != nil {
			_, _ = io.Copy(io.Discard, out) // let the child finish writing, so Wait can reap it
		}
		werr := cmd.Wait()
		if st := cmd.ProcessState; st != nil {
			log.Info("child done", "child", i+1, "base", cs.Base, "fans", s.Count,
				"cpuSeconds", int((st.UserTime() + st.SystemTime()).Seconds()), "peakRSSMB", peakRSS(st))
		}
		switch {
		case derr != nil:
			return nil, fmt.Errorf("child %d at %s: no record (%w): %w", i+1, cs.Base, derr, werr)
		case werr != nil:
			return &part, fmt.Errorf("child %d at %s: %w", i+1, cs.Base, werr)
		}
		return &part, nil
	}
}

// runChild plays the share spec describes and writes its record to stdout.
func runChild(ctx context.Context, specJSON string, stdout, stderr io.Writer) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("child: bad spec: %w", err)
	}
	level := slog.LevelWarn
	if spec.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("child", spec.Block)
	if spec.Profile != "" {
		stop, err := profile(spec.Profile, fmt.Sprintf("child-%d", spec.Block))
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				log.Error("profile", "err", err)
			}
		}()
	}
	c, tr, err := player(log, spec.Base, spec.Share.Count, spec.MaxConns, spec.Block, spec.Sources,
		client.Options{Timeout: spec.Timeout})
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	log.Info("playing", "fans", spec.Share.Count, "first", spec.Share.First, "target", spec.Base)
	part, err := crowd.PlayShare(ctx, crowd.Config{Client: c, Scenario: spec.Scenario, Log: log}, spec.Share)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(stdout).Encode(part); err != nil {
		return errors.Join(errors.New("child: writing the record"), err)
	}
	return nil
}

// player is the client of a process that plays fans (the only process, or a child): its open-file limit raised
// for them, a keep-alive pool of maxConns (0: a connection per fan and some), and, with two or more sources, its
// connections spread over the loopback addresses 127.0.block.1..sources.
func player(log *slog.Logger, base string, fans, maxConns, block, sources int, opts client.Options) (*client.Client, *http.Transport, error) {
	if err := raiseFileLimit(fileNeed(fans)); err != nil {
		log.Warn("file limit", "err", err)
	}
	if maxConns <= 0 {
		maxConns = fans + 64
	}
	var src []net.IP
	if sources > 1 {
		src = client.Loopbacks(block, sources)
	}
	tr := client.NewTransport(maxConns, src...)
	c, err := client.New(base, tr, opts)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	return c, tr, nil
}

// lockedWriter lets the children's log copiers share one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
