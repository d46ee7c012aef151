// Package testparallel lets a test package whose tests mostly wait (on ticks, expiries, PostgreSQL, a browser)
// run more of them at once than go test's default, which is one per CPU. On a 2-core machine that default leaves
// a package like booking/app, whose tests spend some 90 % of their time waiting, running two at a time while the
// cores idle; the suite's wall time is the sum of such waits.
package testparallel

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// AtLeast raises -test.parallel to n unless the command line set it, so `go test -parallel 1` still means one at
// a time. Call it from TestMain before m.Run; it parses the flags if the caller has not.
func AtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.parallel")
	if f == nil {
		return
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v.Name == f.Name })
	if cur, err := strconv.Atoi(f.Value.String()); given || err != nil || cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n))
}

// Main is TestMain for a package that needs nothing else: AtLeast(n), then the tests, then exit with their code.
func Main(m *testing.M, n int) {
	AtLeast(n)
	os.Exit(m.Run())
}
