package app_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	cmd.Env = append(os.Environ(), "BOOKING_LOAD_JOB="+in, "BOOKING_LOAD_REPORT="+rep)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("load process: %v\n%s", err, msg)
	}
	raw, err := os.ReadFile(rep)
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
