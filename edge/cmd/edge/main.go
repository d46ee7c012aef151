// Command edge is flashseat's public entry point: the waiting room, the admission gate, rate limits and the
// reverse proxy to booking. Configuration comes from the environment (see edge/app.Config). With -check-config it
// only loads and validates that configuration and exits: 0 when the edge would start with it, 1 when not.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashseat/flashseat/edge/app"
	"github.com/flashseat/flashseat/shared/infra/driver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

func run() error {
	check := flag.Bool("check-config", false, "validate the configuration from the environment and exit")
	flag.Parse()
	if *check {
		if _, err := app.LoadConfig(os.Getenv); err != nil {
			return err
		}
		fmt.Println("edge: configuration ok")
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	driver.LogRedis(log)
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	return app.Run(ctx, cfg, log, nil)
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
