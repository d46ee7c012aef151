// Package flood holds the figures that show the waiting room's queue stays fair under its bot protection, played
// against the real platform (loadtest/platformtest) with the edge's RATE_EXEMPT=none, so that every address,
// loopback included, is counted and limited as a public one:
//
//   - flood_test.go: a script from one address minting guest identities and joining, again and again, without
//     solving (it must get no place) and solving with every core (places per minute, and what each one cost);
//   - fans_test.go: 200 honest fans behind one address (an office, a carrier NAT) who must all get a place
//     within two minutes, each solving on its own device.
//
// The tests `make test` runs play the default schedule scaled down and count hashes rather than seconds (the
// race detector slows hashing several times, and the machine is shared); the benchmarks play the defaults for
// real and measure the hash rate in their own run. BENCHMARKS.md ("Bot protection") has the latest figures. The
// package has no code of its own: everything it needs is the platform's and the load generator's client.
package flood
