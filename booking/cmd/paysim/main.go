// Command paysim runs the bundled payment gateway simulator (see booking/payment/sim): the subset of Stripe's API
// that booking uses, on PAYSIM_ADDR (default :8082), sending signed webhooks to PAYMENT_WEBHOOK_URL. With
// -check-config it only loads and validates that configuration and exits: 0 when it would start, 1 when not.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

func main() {
	check := flag.Bool("check-config", false, "validate the configuration from the environment and exit")
	flag.Parse()
	if *check {
		if _, err := sim.ConfigFromEnv(os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, "paysim:", err)
			os.Exit(1)
		}
		fmt.Println("paysim: configuration ok")
		return
	}
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
