package megashow

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// A full run's streams need more descriptors than one process may open (a stream is one in the generator and
// one in an edge, and the development machine's limit is 20,000, soft and hard), so each part runs in a child
// process: the parent's command run again with the part's spec, which prints its progress and at last its
// record as JSON lines on stdout and stops its streams when its stdin closes.

// line is one line a child prints.
type line struct {
	Progress *Progress   `json:"progress,omitempty"`
	Result   *PartResult `json:"result,omitempty"`
	Err      string      `json:"err,omitempty"`
}

// ServePart is a child's side: it plays spec until in closes (or ctx ends) and writes its lines to out.
func ServePart(ctx context.Context, spec PartSpec, in io.Reader, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _, _ = io.Copy(io.Discard, in); stop() }()
	enc := json.NewEncoder(out)
	res, err := Play(ctx, spec, func(p Progress) { _ = enc.Encode(line{Progress: &p}) })
	if err != nil {
		_ = enc.Encode(line{Err: err.Error()})
		return err
	}
	return enc.Encode(line{Result: &res})
}

// Children starts each part as exe run with args and the part's spec as its last argument (cmd/loadtest's
// hidden part mode), its stderr passed on.
func Children(exe string, stderr io.Writer, args ...string) func(ctx context.Context, spec PartSpec) (*Part, error) {
	return func(ctx context.Context, spec PartSpec) (*Part, error) {
		b, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, exe, append(append([]string{}, args...), string(b))...)
		cmd.Stderr = stderr
		cmd.Env = os.Environ()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p := &Part{Stop: func() { _ = stdin.Close() }}
		var res *PartResult
		var perr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64<<10), 256<<20) // the record is one line of every fan
			for sc.Scan() {
				var l line
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					continue
				}
				switch {
				case l.Progress != nil:
					p.Tell(*l.Progress)
				case l.Result != nil:
					res = l.Result
				case l.Err != "":
					perr = errors.New(l.Err)
				}
			}
			if err := sc.Err(); err != nil && perr == nil {
				perr = err
			}
		}()
		p.Wait = func() (PartResult, error) {
			<-done
			werr := cmd.Wait()
			switch {
			case perr != nil:
				return PartResult{}, fmt.Errorf("megashow part %d: %w", spec.Index, perr)
			case res == nil:
				return PartResult{}, fmt.Errorf("megashow part %d: no record (%v)", spec.Index, werr)
			}
			return *res, nil
		}
		return p, nil
	}
}
