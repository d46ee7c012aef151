// Command reshard moves shows to the shards a new DATABASE_SHARDS list places them on: with a shard added, only
// the shows that now hash to it move (about 1/N of them). It reads DATABASE_URL (the catalog) and DATABASE_SHARDS
// (the list booking runs with now) from the environment and the new list from -to, and moves each show whose
// shard differs with postgres.MoveShow, printing one line a show. -n prints the plan and moves nothing.
//
// Each show's ledger moves with its queue's record and outbox, bypass codes and audit entries. Run it while nothing
// writes the moving shows (booking's and the edge's replicas stopped), then start both with the new list
// (docs/SCALING.md, "The ledger sharded by show"). A move that fails leaves the show whole on its old shard, and
// running the command again carries on where it stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/shard"
)

func main() {
	to := flag.String("to", "", "the new DATABASE_SHARDS list (name=URL, separated by spaces or ';')")
	dry := flag.Bool("n", false, "print the plan, move nothing")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv("DATABASE_URL"), os.Getenv("DATABASE_SHARDS"), *to, *dry, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reshard:", err)
		os.Exit(1)
	}
}

// run moves every show of the catalog at catalogURL whose shard under the list from differs under the list to.
func run(ctx context.Context, catalogURL, from, to string, dry bool, out io.Writer) error {
	if catalogURL == "" {
		return fmt.Errorf("DATABASE_URL (the catalog) is not set")
	}
	oldShards, err := shard.Parse(from)
	if err != nil {
		return err
	}
	newShards, err := shard.Parse(to)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	if len(oldShards) == 0 || len(newShards) == 0 {
		return fmt.Errorf("DATABASE_SHARDS and -to both name shards")
	}
	oldRing, err := shard.New(shard.Names(oldShards))
	if err != nil {
		return err
	}
	newRing, err := shard.New(shard.Names(newShards))
	if err != nil {
		return err
	}
	urls := map[string]string{}
	for _, s := range append(oldShards, newShards...) {
		if u, ok := urls[s.Name]; ok && u != s.URL {
			return fmt.Errorf("shard %s has two URLs: a shard keeps its name and its database", s.Name)
		}
		urls[s.Name] = s.URL
	}
	// reshard runs while booking is stopped and its moves are long transactions: it takes the servers' own URLs,
	// never PgBouncer's (no DATABASE_POOLER).
	catalog, err := postgres.Open(ctx, catalogURL, "")
	if err != nil {
		return err
	}
	defer catalog.Close()
	rows, err := catalog.Query(ctx, `SELECT id FROM shows ORDER BY id`)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	shows, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	pools := map[string]*pgxpool.Pool{}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	pool := func(name string) (*pgxpool.Pool, error) {
		if p, ok := pools[name]; ok {
			return p, nil
		}
		p, err := postgres.Open(ctx, urls[name], "") // migrates a new shard
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", name, err)
		}
		pools[name] = p
		return p, nil
	}
	moves := 0
	for _, show := range shows {
		a, b := oldRing.Names()[oldRing.Of(show)], newRing.Names()[newRing.Of(show)]
		if a == b {
			continue
		}
		moves++
		if dry {
			fmt.Fprintf(out, "%s %s -> %s (not moved: -n)\n", show, a, b)
			continue
		}
		src, err := pool(a)
		if err != nil {
			return err
		}
		dst, err := pool(b)
		if err != nil {
			return err
		}
		n, err := postgres.MoveShow(ctx, catalog, src, dst, show)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s -> %s: %d rows\n", show, a, b, n)
	}
	fmt.Fprintf(out, "%d of %d shows move\n", moves, len(shows))
	return nil
}
