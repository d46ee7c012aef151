// Package spike proves, through the real edge and booking (loadtest/platformtest: two edge replicas, booking and
// the payment simulator on real PostgreSQL and Redis), what a show's queue in threshold mode promises when a spike
// of fans hits it: with an active-users threshold of 50, the first fans pass straight through (admitted in the
// join's own answer, with a token); the queue engages within a second of the threshold being reached, on both
// edge replicas; the live admissions never exceed the threshold by more than one tick's worth of the admission
// rate; no request of any fan, nor of the operator's view polled every 50 ms, is answered with a 5xx; and once
// the crowd has been served the queue disengages within its cooldown (plus a margin) and a new fan passes through
// at once again. Every fan is a real client: it signs in as a guest, solves the proof of work the show's bot
// protection asks for on join, waits over the event stream when told to, then holds a seat of its own and pays;
// the store checker (loadtest/check) judges the seats and money afterwards.
//
// `make test` plays 300 fans joining over 5 s. CHAOS=full plays the full 2,000 fans in 5 s, without the race
// detector as `make chaos` runs its crowds: under it the one test process that holds the platform and the crowd
// could not take 2,000 joins in 5 s on two cores (a join took 16 s at the median), and the spike became a trickle:
//
//	CHAOS=full go test -count=1 -v -run TestThresholdSpike ./loadtest/spike/
//
// A fan asks again, with backoff, after a 429, a 503 store-unavailable (an edge or booking whose store round trip
// ran past its deadline on a starved machine) or no answer at all; every request it retries is idempotent. Those
// 503s are counted apart and logged; any other 5xx fails the test.
package spike
