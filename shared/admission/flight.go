package admission

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// flightTimeout bounds a shared read or restore. It is not any caller's deadline: each caller stops waiting at its
// own, and the flight goes on for the others.
const flightTimeout = 5 * time.Second

// flights lets concurrent calls for one show share one read: the first starts it, the others wait for it. A read
// runs on a context of its own (not its starter's: one caller giving up must not fail the others sharing it), and
// each caller waits for it at most until its own context ends.
type flights[T any] struct {
	// maxAge is how long after it began a read may still be joined; 0: for as long as it runs. A read that began
	// longer ago may be older than what the caller is allowed to see (the gate's one-second bound), so the
	// caller starts the next one.
	maxAge time.Duration

	mu sync.Mutex
	m  map[string]*flight[T] // by show; an entry lives while its read runs, until it is forgotten or superseded
}

type flight[T any] struct {
	done  chan struct{} // closed when v and err are set
	began time.Time
	v     T
	err   error
}

// do returns what read gives for show, from a read started no longer than maxAge ago or from a new one. keep, if
// not nil, is given a successful result and the time its read began, under the lock forget takes: a result whose
// flight was forgotten meanwhile is not kept (it may predate the change that was announced).
func (fs *flights[T]) do(ctx context.Context, show string, read func(context.Context) (T, error), keep func(T, time.Time)) (T, error) {
	now := time.Now()
	fs.mu.Lock()
	f, ok := fs.m[show]
	if !ok || (fs.maxAge > 0 && now.Sub(f.began) >= fs.maxAge) {
		f = &flight[T]{done: make(chan struct{}), began: now}
		if fs.m == nil {
			fs.m = map[string]*flight[T]{}
		}
		fs.m[show] = f
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flightTimeout)
			f.v, f.err = read(rctx)
			cancel()
			fs.mu.Lock()
			if fs.m[show] == f {
				delete(fs.m, show)
				if f.err == nil && keep != nil {
					keep(f.v, f.began)
				}
			}
			fs.mu.Unlock()
			close(f.done)
		}()
	}
	fs.mu.Unlock()
	select {
	case <-f.done:
		return f.v, f.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	}
}

// forget makes the next call for show start a read of its own, and keeps nothing of the one under way; then, if
// not nil, runs under the same lock, so that no result of a forgotten read is kept after it.
func (fs *flights[T]) forget(show string, then func()) {
	fs.mu.Lock()
	delete(fs.m, show)
	if then != nil {
		then()
	}
	fs.mu.Unlock()
}
