package redistest

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// pkg is the state of the test binary's package: its targets, the current pass and its shared cluster.
var pkg = struct {
	mu      sync.Mutex
	targets []Target
	pass    Target // New's target
	each    bool   // RunEach: the whole package runs once per target

	cluster    []string // the shared cluster's nodes, once started (or given)
	clusterErr error    // why it could not start: every later test fails at once with it
	owner      *mainTB  // the TestMain-scoped owner of the started cluster's servers
}{targets: []Target{Single, Cluster}, pass: Single}

// Run runs the package's tests once, with New on single Redis (or on the cluster when REDIS_TEST_TARGETS is just
// "cluster"); a test asking for the cluster (Each, Prefer) gets the package's shared one. It returns m.Run's
// code, after stopping the cluster.
func Run(m *testing.M) int {
	ts, err := targets()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 2
	}
	pkg.mu.Lock()
	pkg.targets, pkg.pass = ts, ts[0]
	pkg.mu.Unlock()
	defer stopCluster()
	return m.Run()
}

// RunEach runs the package's tests once per target, single Redis first, so every storage test also runs on a
// Redis Cluster. With -bench or -list it runs one pass, on the first target. It returns the first failing pass's code (0
// when every pass passed), after stopping the cluster.
func RunEach(m *testing.M) int { return RunEachOf(m, "") }

// RunEachOf is RunEach with the cluster pass narrowed to the tests matching the -run pattern cluster, unless the
// command line's own -run narrows both passes: for a package whose tests are mostly about something else, the
// ones about Redis run on the cluster too.
func RunEachOf(m *testing.M, cluster string) int {
	ts, err := targets()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 2
	}
	defer stopCluster()
	if !flag.Parsed() {
		flag.Parse()
	}
	for _, name := range []string{"test.bench", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			// Benchmarks measure one Redis against a baseline on it; a second pass would print every figure (or
			// every test's name) twice.
			ts = ts[:1]
		}
	}
	run := flag.Lookup("test.run")
	narrow := cluster != "" && run != nil && run.Value.String() == ""
	code := 0
	for _, target := range ts {
		pkg.mu.Lock()
		pkg.targets, pkg.pass, pkg.each = ts, target, true
		pkg.mu.Unlock()
		if narrow && target == Cluster {
			_ = run.Value.Set(cluster)
		}
		if len(ts) > 1 {
			// Test names repeat across passes; this line says which Redis a failure below happened on.
			fmt.Printf("redistest: the package's tests on %s Redis\n", target)
		}
		if c := m.Run(); c != 0 && code == 0 {
			code = c
		}
		if narrow {
			_ = run.Value.Set("")
		}
	}
	return code
}

// Pass is the target New gives tests now: in a RunEach package, the current pass's.
func Pass() Target {
	pkg.mu.Lock()
	defer pkg.mu.Unlock()
	return pkg.pass
}

// clusterAddrs returns the shared cluster's nodes, starting it on first use: REDIS_TEST_CLUSTER_ADDRS's cluster
// when set (a test variable of its own: the apps read REDIS_CLUSTER_ADDRS, and tests that start apps from the
// environment must not be moved onto it), else three masters and three replicas from the machine's redis-server.
func clusterAddrs(t testing.TB) []string {
	t.Helper()
	pkg.mu.Lock()
	defer pkg.mu.Unlock()
	if pkg.cluster == nil && pkg.clusterErr == nil {
		if v := os.Getenv("REDIS_TEST_CLUSTER_ADDRS"); v != "" {
			pkg.cluster = strings.Split(v, ",")
		} else {
			pkg.owner = &mainTB{}
			pkg.cluster, pkg.clusterErr = pkg.owner.startCluster()
		}
	}
	if pkg.clusterErr != nil {
		t.Fatalf("redistest: the package's Redis Cluster: %v", pkg.clusterErr)
	}
	return pkg.cluster
}

func stopCluster() {
	pkg.mu.Lock()
	owner := pkg.owner
	pkg.owner, pkg.cluster = nil, nil
	pkg.mu.Unlock()
	if owner != nil {
		owner.close()
	}
}

// mainTB is storetest.TB for servers that outlive any one test: cleanups run when the package's tests are done,
// and a fatal error while starting becomes an error the asking test reports.
type mainTB struct {
	mu       sync.Mutex
	cleanups []func()
	dirs     []string
}

type fatal struct{ err error }

func (m *mainTB) Helper() {}

func (m *mainTB) Fatalf(format string, args ...any) { panic(fatal{fmt.Errorf(format, args...)}) }

func (m *mainTB) Cleanup(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleanups = append(m.cleanups, f)
}

func (m *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		m.Fatalf("redistest: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs = append(m.dirs, dir)
	return dir
}

// startCluster starts the six nodes; on failure, whatever did start is stopped.
func (m *mainTB) startCluster() (addrs []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			m.close()
			addrs, err = nil, f.err
		}
	}()
	return storetest.StartCluster(m, 3, 1).Addrs, nil
}

// close runs the cleanups, last first as testing does, and removes the temporary directories.
func (m *mainTB) close() {
	m.mu.Lock()
	cleanups, dirs := m.cleanups, m.dirs
	m.cleanups, m.dirs = nil, nil
	m.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
