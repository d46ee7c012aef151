package app

import (
	"context"
	"time"

	"github.com/flashseat/flashseat/edge/console"
	"github.com/flashseat/flashseat/waitroom"
)

// ConsoleConfig is the operator console's part of the edge's environment.
type ConsoleConfig struct {
	SessionTTL time.Duration // CONSOLE_SESSION_TTL, default 8h: how long a console sign-in lasts
	Every      time.Duration // CONSOLE_FIGURES_EVERY, default 1s: how often the live figures are gathered
}

func (l *loader) console(cfg *Config) {
	cfg.Console = ConsoleConfig{
		SessionTTL: l.Duration("CONSOLE_SESSION_TTL", 8*time.Hour),
		Every:      l.Duration("CONSOLE_FIGURES_EVERY", time.Second),
	}
	if cfg.Console.SessionTTL < time.Minute || cfg.Console.SessionTTL > 7*24*time.Hour {
		l.Fail("CONSOLE_SESSION_TTL must be between 1m and 168h")
	}
	if cfg.Console.Every < 100*time.Millisecond {
		l.Fail("CONSOLE_FIGURES_EVERY must be at least 100ms")
	}
}

// mountConsole mounts the operator console (edge/console) ahead of the operator routes it forwards to, and
// starts its figures gatherer, which reads the waiting room through svc and booking over HTTP.
func mountConsole(ctx context.Context, e *Edge, svc *waitroom.Service) *console.Figures {
	cc := e.Config.Console
	figures := console.NewFigures(e.Config.BookingURL, e.Config.Waitroom.AdminToken, queueFigures(svc), cc.Every, e.Log)
	con := console.New(console.Config{AdminToken: e.Config.Waitroom.AdminToken, Redis: e.Redis,
		SessionTTL: cc.SessionTTL, Secure: e.Config.Waitroom.SecureCookies, Figures: figures, Log: e.Log})
	con.Mount(e.Router)
	if e.Registry != nil {
		e.Registry.MustRegister(console.NewShowCollector(figures))
	}
	e.Workers.Add(2)
	go func() { defer e.Workers.Done(); figures.Run(e.Work) }()
	go func() {
		defer e.Workers.Done()
		select {
		case <-ctx.Done():
		case <-e.Work.Done():
		}
		con.Close()
	}()
	return figures
}

// queueFigures reads a show's queue for the console: settings, counters and the guard's figures from Redis, and
// the queue's speed as this replica measures it (the same measure that gives fans their ETA).
func queueFigures(svc *waitroom.Service) console.QueueSource {
	return func(ctx context.Context, show string) (console.QueueFigures, error) {
		st, c, err := svc.Settings(ctx, show)
		if err != nil {
			return console.QueueFigures{}, err
		}
		bots, err := svc.BotFigures(ctx, show)
		if err != nil {
			return console.QueueFigures{}, err
		}
		bots.Solves = nil // the median is taken; the round need not keep a thousand solve times per show
		q := console.QueueFigures{Enabled: st.Enabled, Paused: st.Paused, AdmitPerSecond: st.AdmitPerSecond, MaxActive: st.MaxActive,
			TokenTTLSeconds: st.TokenTTLSeconds, Waiting: c.Waiting, Active: c.Active, AdmittedTotal: c.AdmittedTotal,
			TurnHoldSeconds: st.TurnHoldSeconds, Bot: st.Bot, Bots: bots, Mode: st.QueueMode(), Engaged: c.Engaged,
			ActiveUsers: c.ActiveUsers, ArrivalsPerMinute: c.ArrivalsPerMinute, Lanes: c.Lanes, Tuning: st.Tuning}
		measured, ok, _ := svc.Hub.Rate(show)
		if ok {
			q.ActualRate = measured
		}
		q.LastETASeconds = int64(waitroom.ETA(c.Waiting, measured, ok, st.AdmitPerSecond).Seconds())
		return q, nil
	}
}
