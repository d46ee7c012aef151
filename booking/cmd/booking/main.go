// Command booking serves the booking API: catalog, seat maps, holds and the operator API. Configuration comes
// from the environment (see booking/app.Config); SIGINT or SIGTERM shuts it down gracefully.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashseat/flashseat/booking/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "booking:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).With("service", "booking")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, cfg, log, nil)
}
