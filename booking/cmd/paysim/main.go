// Command paysim runs the bundled payment gateway simulator (see booking/payment/sim): the subset of Stripe's API
// that booking uses, on PAYSIM_ADDR (default :8082), sending signed webhooks to PAYMENT_WEBHOOK_URL.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paysim:", err)
		stop()
		os.Exit(1)
	}
}

// run reads the configuration from getenv and serves until ctx ends.
func run(ctx context.Context, getenv func(string) string, logOut *os.File) error {
	logger := slog.New(slog.NewJSONHandler(logOut, nil)).With("service", "paysim")
	cfg, err := sim.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	return sim.Run(ctx, cfg, logger, nil)
}
