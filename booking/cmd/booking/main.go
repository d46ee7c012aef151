// Command booking serves the booking API: catalog, seat maps, holds and the operator API. Configuration comes
// from the environment (see booking/app.Config); SIGINT or SIGTERM shuts it down gracefully. With -check-config it
// only loads and validates that configuration and exits: 0 when booking would start with it, 1 when not. With
// -probe URL it GETs URL and exits 0 on a 2xx: the container image has no shell or curl, so compose and
// Kubernetes health checks of every service in it run this.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/shared/infra/driver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "booking:", err)
		os.Exit(1)
	}
}

func run() error {
	check := flag.Bool("check-config", false, "validate the configuration from the environment and exit")
	probeURL := flag.String("probe", "", "GET this URL and exit 0 on a 2xx answer (a container health check)")
	flag.Parse()
	if *probeURL != "" {
		return probe(*probeURL)
	}
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	if *check {
		fmt.Println("booking: configuration ok")
		return nil
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).With("service", "booking")
	driver.LogRedis(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return app.Run(ctx, cfg, log, nil)
}

func probe(url string) error {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe %s: %s", url, resp.Status)
	}
	return nil
}
