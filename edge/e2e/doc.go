// Package e2e holds the edge's end-to-end tests and benchmarks against the real booking service (booking/app.Run
// on a fresh PostgreSQL database and the real Redis): the seat map and a hold through the edge, the admission gate
// in front of booking's own check, and the proxy's overhead against calling booking directly. It is its own
// package so that the edge's unit and proxy tests never depend on booking building.
package e2e
