package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// Acknowledged joins (Store.WaitReplicas): Redis replicates asynchronously, so a master that dies may take its
// last few milliseconds of writes with it, and the replica promoted in its place hands the tickets of the joins it
// never saw to later joiners. With WaitReplicas on, a join is answered only once Redis's WAIT has confirmed that
// the join's write reached that many replicas: a fan is never told a ticket that a failover can forget. With one
// replica per master and WAIT 1, the replica a Redis Cluster promotes holds every acknowledged join (it is the
// only one that can be promoted); with more replicas WAIT must count all of them, or the cluster may promote one
// that had not acknowledged.
//
// WAIT confirms the writes of the connection it runs on, up to the last one: it must follow the join on the same
// connection, which the autopipeliner that batches ordinary joins cannot promise. So joins go through lanes, one
// per master node: a lane sends whatever joins are queued as one pipeline on one of the node's connections (the
// join scripts, a mark, then one WAIT), so concurrent joins share one WAIT and its round trip to the replicas, and
// the cost per join stays that of its script. A lone joiner is sent at once.
//
// The mark is a write of the lane's own after the scripts. WAIT counts from the connection's last write, and a
// join that finds its fan already placed (a second join, a retry, a status poll of a fan who reconnects) may
// write nothing (its heartbeat has the same millisecond) and still answer a ticket written by another
// connection, perhaps not replicated yet: the mark moves the connection's offset past everything its scripts
// read.
//
// If fewer replicas acknowledge within the timeout, every join of the batch that tells a place fails with
// ErrUnavailable (a 503 with Retry-After; placed says which replies wait): the writes stay on the master, but no
// fan holds a ticket the replicas may lack. A retry is idempotent: join.lua finds the fan where the first try
// placed it, and answers the same ticket once a replica has it. A lookup (Store.Lookup) writes nothing and goes
// the ordinary way: it can show a place only a refused join wrote, but that fan was answered 503 and is retrying.
//
// Other writes are not waited for. A rebuild (restore.lua) a failover lost leaves the state missing again, and it
// is rebuilt from the same records; and since WAIT counts the master's replication stream up to the mark, every
// acknowledged join confirms the rebuild, the draw and whatever else came before it.
//
// A master whose only replica was promoted in a failover has none: places then wait (503) until a replica is
// back, the price of never telling a fan a place that a second failover could lose.

// settle waits until every write the master of key has made so far is on the replicas: a mark, then WAIT, on
// one connection. The opening draw uses it (draw.go): before it reads the pre-opening pool, so that the pool it
// orders is the one a promoted replica holds (the pool is final once the sale has opened, and the order is a
// function of seed and pool, so a draw a failover lost is drawn again the same), and after its last write, so
// that the draw is recorded as done only once the replicas hold it.
func (r *replicas) settle(ctx context.Context, show string) error {
	node, err := r.node(ctx, Mark(show))
	if err != nil {
		return err
	}
	var wait *goredis.Cmd
	if _, err := node.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, Mark(show), "1", markTTL)
		wait = p.Do(ctx, "wait", r.n, r.timeout.Milliseconds())
		return nil
	}); err != nil {
		return err
	}
	if acked, _ := wait.Int64(); acked < int64(r.n) {
		return fmt.Errorf("%w: %d of %d replicas acknowledged the draw within %s", waitroom.ErrUnavailable, acked,
			r.n, r.timeout)
	}
	return nil
}

// maxBatch bounds the joins of one pipeline: a few milliseconds of scripts, well inside the client's read
// timeout, which covers the whole pipeline and the WAIT at its end.
const maxBatch = 512

// lanesInFlight is how many pipelines a lane runs at once, each on its own connection. One would leave Redis
// idle while a batch waits on its replicas; a few keep it busy, and each batch still shares one WAIT.
const lanesInFlight = 4

// markTTL keeps a mark key only as long as a lane may need it again soon.
const markTTL = time.Minute

// Mark is the key a lane writes after each batch of joins of show (the lane's write, see above), in the show's
// slot so it is on the node the joins ran on.
func Mark(show string) string { return rediskey.Tag(show) + ":wr:mark" }

// replicas answers joins once WAIT says their writes reached n replicas (Store.WaitReplicas).
type replicas struct {
	rdb     goredis.UniversalClient
	n       int
	timeout time.Duration
	mu      sync.Mutex
	lanes   map[*goredis.Client]*lane // per master node (a single Redis has one)
}

// WaitReplicas makes joins wait, before they are answered, until Redis's WAIT confirms their writes reached n
// replicas (n 0 turns it off), for at most timeout; it must be set before the store is used. It needs a client
// of one Redis (with its replicas) or of a Redis Cluster, whose joins it can route to each master itself.
func (s *Store) WaitReplicas(n int, timeout time.Duration) error {
	if n <= 0 {
		s.replicas = nil
		return nil
	}
	if timeout < time.Millisecond {
		return errors.New("waitroom/redis: a replica timeout must be at least 1ms (WAIT's unit; WAIT 0 waits for ever)")
	}
	switch s.rdb.(type) {
	case *goredis.Client, *goredis.ClusterClient:
	default:
		return fmt.Errorf("waitroom/redis: waiting for replicas needs a Redis or Redis Cluster client, not %T", s.rdb)
	}
	s.replicas = &replicas{rdb: s.rdb, n: n, timeout: timeout, lanes: map[*goredis.Client]*lane{}}
	return nil
}

// join runs join.lua for keys and args on the master of their slot, answered once replicated.
func (r *replicas) join(ctx context.Context, show string, keys []string, args []any) ([]any, error) {
	// A redirection (MOVED, ASK: the slot moved, as in a failover) means the script did not run; the cluster
	// client is told to read the slots again and the join goes to the lane of the new master.
	var err error
	for range 3 {
		var node *goredis.Client
		if node, err = r.node(ctx, keys[0]); err != nil {
			return nil, err
		}
		c := &call{show: show, keys: keys, args: args, done: make(chan struct{})}
		r.lane(node).submit(ctx, c)
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err = c.err; !redirected(err) {
			return c.reply, err
		}
		if cc, ok := r.rdb.(*goredis.ClusterClient); ok {
			cc.ReloadState(ctx)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("%w: %w", waitroom.ErrUnavailable, err)
}

func redirected(err error) bool {
	_, moved := goredis.IsMovedError(err)
	_, ask := goredis.IsAskError(err)
	return moved || ask
}

// node is the client of the master serving key.
func (r *replicas) node(ctx context.Context, key string) (*goredis.Client, error) {
	switch c := r.rdb.(type) {
	case *goredis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *goredis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("waitroom/redis: no master for %T", r.rdb)
}

func (r *replicas) lane(node *goredis.Client) *lane {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lanes[node]
	if l == nil {
		l = &lane{r: r, node: node}
		r.lanes[node] = l
	}
	return l
}

// call is one join waiting in a lane.
type call struct {
	show  string
	keys  []string
	args  []any
	reply []any
	err   error
	done  chan struct{}
}

// lane batches the joins of one master node. It keeps no goroutine of its own: the join that finds it idle runs
// the batch, and goes on with whatever queued meanwhile until the queue is empty.
type lane struct {
	r       *replicas
	node    *goredis.Client
	mu      sync.Mutex
	queue   []*call
	running int
}

// submit queues c and, if fewer than lanesInFlight pipelines are under way, starts one.
func (l *lane) submit(ctx context.Context, c *call) {
	l.mu.Lock()
	l.queue = append(l.queue, c)
	if l.running >= lanesInFlight {
		l.mu.Unlock()
		return
	}
	l.running++
	b := l.take()
	l.mu.Unlock()
	// The batch is everyone's: a caller that gives up must not cancel the others' joins.
	go l.run(context.WithoutCancel(ctx), b)
}

// take removes up to maxBatch calls from the queue; l.mu is held.
func (l *lane) take() []*call {
	n := min(len(l.queue), maxBatch)
	b := l.queue[:n:n]
	l.queue = l.queue[n:]
	if len(l.queue) == 0 {
		l.queue = nil // lets the batches' arrays go
	}
	return b
}

func (l *lane) run(ctx context.Context, b []*call) {
	for {
		l.exec(ctx, b)
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running--
			l.mu.Unlock()
			return
		}
		b = l.take()
		l.mu.Unlock()
	}
}

// exec sends b's scripts, the mark and WAIT as one pipeline on one connection, and answers each call.
func (l *lane) exec(ctx context.Context, b []*call) {
	defer func() {
		for _, c := range b {
			close(c.done)
		}
	}()
	cmds, acked, err := l.pipeline(ctx, b, false)
	if err == nil && noScript(cmds) {
		// A node that has not seen the script (a replica just promoted, a restart): load it, and send again the
		// joins it refused, which did not run.
		if err = joinScript.Load(ctx, l.node).Err(); err == nil {
			var again []*call
			for i, c := range b {
				if noScript(cmds[i : i+1]) {
					again = append(again, c)
				}
			}
			var cmds2 []*goredis.Cmd
			cmds2, acked, err = l.pipeline(ctx, again, true)
			for i, k := 0, 0; i < len(b) && err == nil; i++ {
				if noScript(cmds[i : i+1]) {
					cmds[i] = cmds2[k]
					k++
				}
			}
		}
	}
	for i, c := range b {
		if err != nil {
			c.err = err
			continue
		}
		c.reply, c.err = cmds[i].Slice()
		if c.err == nil && acked < int64(l.r.n) && placed(c.reply) {
			c.reply, c.err = nil, fmt.Errorf("%w: %d of %d replicas acknowledged the join within %s",
				waitroom.ErrUnavailable, acked, l.r.n, l.r.timeout)
		}
	}
}

// placed reports whether a join.lua reply tells the fan a place (a ticket, or a seat in the pre-opening pool),
// which the replicas must hold first. The other replies are answered whatever WAIT said: an admission is made
// durable by its record before any token is handed out, and the rest (a refusal, closed, sold out, the draw
// pending, a request to restore) tell no place a failover could forget. So a master left without its replica
// (a failover promoted it) still lets admitted fans in and turns others away; only places wait for a replica.
// A shadow place looks like a ticket to whoever holds it, and is answered like one.
func placed(reply []any) bool {
	if len(reply) == 0 {
		return false
	}
	switch kind, _ := reply[0].(string); kind {
	case "waiting", "pre", "shadow":
		return true
	}
	return false
}

// pipeline sends b's scripts (EVALSHA, or EVAL when eval), then the mark, then WAIT, and returns the scripts'
// commands and how many replicas WAIT counted; err is the pipeline's own failure (the mark's or WAIT's).
func (l *lane) pipeline(ctx context.Context, b []*call, eval bool) ([]*goredis.Cmd, int64, error) {
	cmds := make([]*goredis.Cmd, len(b))
	var mark *goredis.StatusCmd
	var wait *goredis.Cmd
	_, _ = l.node.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, c := range b {
			if eval {
				cmds[i] = joinScript.Eval(ctx, p, c.keys, c.args...)
			} else {
				cmds[i] = joinScript.EvalSha(ctx, p, c.keys, c.args...)
			}
		}
		mark = p.Set(ctx, Mark(b[0].show), "1", markTTL)
		// Pipeliner has no Wait: WAIT numreplicas timeout-ms, by hand.
		wait = p.Do(ctx, "wait", l.r.n, l.r.timeout.Milliseconds())
		return nil
	})
	if err := mark.Err(); err != nil {
		return cmds, 0, err
	}
	acked, err := wait.Int64()
	if err != nil {
		return cmds, 0, err
	}
	return cmds, acked, nil
}

func noScript(cmds []*goredis.Cmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT")) {
			return true
		}
	}
	return false
}
