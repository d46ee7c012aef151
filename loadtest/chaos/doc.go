// Package chaos is the platform's chaos test (chaos_test.go): a flash crowd plays a queued sale against the real
// binaries (booking and the edge as processes it can SIGKILL, over a private PostgreSQL cluster and a private
// Redis it can restart) while it kills booking, restarts PostgreSQL, kills the edge and kills Redis, restarting it
// empty; then it judges the money, the seats, the waiting room and every answer. `make test` runs a short version;
// `make chaos` runs the full one (CHAOS=full) and writes a report for BENCHMARKS.md. Beside it, failover_test.go
// plays a crowd against the platform on a six-node Redis Cluster and kills the show's master mid-sale, and
// trickle_test.go keeps a show admitting at its store-down trickle while Redis is dead. The package
// has no code of its own: everything it needs is the platform's.
package chaos
