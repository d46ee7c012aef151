package app_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// runChild runs test, a test function of this binary, in a child process with job (JSON in a file) and decodes
// what it reports into out. The hold benchmarks' load generators run this way, so the servers' goroutines do
// not share a scheduler (nor a heap) with the clients' goroutines; the operating system shares the CPUs.
func runChild(b testing.TB, test string, job, out any) {
	dir := b.TempDir()
	in, rep := filepath.Join(dir, "job.json"), filepath.Join(dir, "report.json")
	raw, _ := json.Marshal(job)
	if err := os.WriteFile(in, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BOOKING_LOAD_JOB="+in, "BOOKING_LOAD_REPORT="+rep, "BOOKING_SERVER_CPU=1")
	stop := serveCPU(b, cmd)
	msg, err := cmd.CombinedOutput()
	stop()
	if err != nil {
		b.Fatalf("load process: %v\n%s", err, msg)
	}
	raw, err = os.ReadFile(rep)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.Fatal(err)
	}
}

// childJob reads a child process's job into job; it reports false in a normal test run, where there is none.
func childJob(t *testing.T, job any) bool {
	in := os.Getenv("BOOKING_LOAD_JOB")
	if in == "" {
		return false
	}
	raw, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, job); err != nil {
		t.Fatal(err)
	}
	return true
}

// childReport hands v back to runChild.
func childReport(t *testing.T, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("BOOKING_LOAD_REPORT"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serveCPU answers the child's questions for this process's CPU time (serverCPU) over two pipes, the child's
// descriptors 3 (questions, one byte each) and 4 (answers, eight bytes of nanoseconds): getrusage's microseconds
// at the moment the child asks, where /proc/PID/stat would round to the 10 ms clock tick. stop closes the pipes
// once the child has exited.
func serveCPU(b testing.TB, cmd *exec.Cmd) (stop func()) {
	askR, askW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{askW, ansR}
	var wg sync.WaitGroup
	wg.Go(func() {
		var q [1]byte
		var a [8]byte
		for {
			if _, err := askR.Read(q[:]); err != nil {
				return // the child exited and stop closed the pipe
			}
			binary.LittleEndian.PutUint64(a[:], uint64(processCPU()))
			if _, err := ansW.Write(a[:]); err != nil {
				return
			}
		}
	})
	return func() {
		// The parent's copies of the child's ends, then its own: the reader sees EOF.
		_ = askW.Close()
		_ = ansR.Close()
		_ = askR.Close()
		_ = ansW.Close()
		wg.Wait()
	}
}

// parentCPU asks the parent (serveCPU) for its CPU time; ok is false when this process was not started by runChild.
var parentCPU = sync.OnceValue(func() func() (time.Duration, bool) {
	if os.Getenv("BOOKING_SERVER_CPU") == "" {
		return func() (time.Duration, bool) { return 0, false }
	}
	ask, ans := os.NewFile(3, "cpu-ask"), os.NewFile(4, "cpu-answer")
	var mu sync.Mutex
	return func() (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		var a [8]byte
		if _, err := ask.Write([]byte{'?'}); err != nil {
			return 0, false
		}
		if _, err := io.ReadFull(ans, a[:]); err != nil {
			return 0, false
		}
		return time.Duration(binary.LittleEndian.Uint64(a[:])), true
	}
})
