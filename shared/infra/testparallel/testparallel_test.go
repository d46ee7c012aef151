package testparallel_test

import (
	"flag"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/testparallel"
)

var given bool

func TestMain(m *testing.M) {
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	testparallel.AtLeast(4)
	os.Exit(m.Run())
}

// Four parallel tests that each wait until all four are running: they finish only if the package runs four at
// once, whatever the machine's CPU count (the default would be one per CPU).
func TestFourAtOnce(t *testing.T) {
	if given {
		t.Skip("-parallel given on the command line: it stands")
	}
	var running atomic.Int32
	for _, name := range []string{"a", "b", "c", "d"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			running.Add(1)
			for deadline := time.Now().Add(10 * time.Second); running.Load() < 4; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of 4 running at once: -test.parallel was not raised", running.Load())
				}
			}
		})
	}
}
