// Package e2e holds the edge's end-to-end tests and benchmarks against the real booking service (booking/app.Run
// on a fresh PostgreSQL database and the real Redis): the seat map and a hold through the edge, the admission gate
// in front of booking's own check, and the proxy's overhead against calling booking directly. It is its own
// package so that the edge's unit and proxy tests never depend on booking building.
//
// Every test starts a platform of its own (its own database, event stream and shows, so its own Redis keys) and
// its own browser, and so runs in parallel with the others (t.Parallel, as many at once as -parallel allows: the
// CPU count by default). The journeys mostly wait, on queue ticks, expiries and pages, so two at once take about
// half the wall time of one after another; their tabs' deadlines are minutes, far past what a loaded machine
// needs, and a wait ends on the event it waits for.
package e2e
