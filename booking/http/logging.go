package http

import (
	"context"
	"log/slog"
)

// WithRequestIDs returns log with the request id of each record's context added to the record, so whatever is
// logged while serving a request (by a handler, the Service or a store) can be joined with that request.
func WithRequestIDs(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(requestIDs); ok {
		return log
	}
	return slog.New(requestIDs{log.Handler()})
}

type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(as)}
}
func (h requestIDs) WithGroup(name string) slog.Handler { return requestIDs{h.Handler.WithGroup(name)} }
