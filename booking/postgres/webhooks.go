package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/webhook"
)

var _ webhook.Store = (*Store)(nil)

// endpointColumns: the previous secret's expiry only while it still signs.
const endpointColumns = `id, url, COALESCE(show_id, ''), types, secret, created_at,
	CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END`

func scanEndpoint(row pgx.Row) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var prevUntil *time.Time
	err := row.Scan(&e.ID, &e.URL, &e.ShowID, &e.Types, &e.Secret, &e.CreatedAt, &prevUntil)
	e.CreatedAt = e.CreatedAt.UTC()
	if prevUntil != nil {
		e.PreviousSecretExpiresAt = prevUntil.UTC()
	}
	return e, err
}

// RollSecret implements webhook.Store.
func (s *Store) RollSecret(ctx context.Context, id, secret string, graceUntil time.Time) (webhook.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `UPDATE webhook_endpoints SET secret = $2,
			previous_secret = CASE WHEN $3 > now() THEN secret END,
			previous_secret_expires_at = CASE WHEN $3 > now() THEN $3::timestamptz END
		WHERE id = $1 AND deleted_at IS NULL RETURNING `+endpointColumns, id, secret, graceUntil))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.Endpoint{}, fmt.Errorf("webhook endpoint %s: %w", id, booking.ErrNotFound)
	}
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("postgres: roll webhook secret: %w", err)
	}
	return e, nil
}

// CreateEndpoint implements webhook.Store.
func (s *Store) CreateEndpoint(ctx context.Context, e webhook.Endpoint) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_endpoints (id, url, show_id, types, secret, created_at)
		VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6)`, e.ID, e.URL, e.ShowID, e.Types, e.Secret, e.CreatedAt)
	if err != nil {
		return fmt.Errorf("postgres: create webhook endpoint: %w", err)
	}
	return nil
}

// Endpoints implements webhook.Store.
func (s *Store) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE deleted_at IS NULL
		ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: webhook endpoints: %w", err)
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: webhook endpoints: %w", err)
	}
	return es, nil
}

// DeleteEndpoint implements webhook.Store.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete webhook endpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook endpoint %s: %w", id, booking.ErrNotFound)
	}
	return nil
}

// Enqueue implements webhook.Store.
func (s *Store) Enqueue(ctx context.Context, e booking.LifecycleEvent, body func(webhook.Endpoint) (string, []byte)) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE deleted_at IS NULL AND (show_id IS NULL OR show_id = $1) AND (cardinality(types) = 0 OR $2 = ANY(types))`,
		e.ShowID, e.Type)
	if err != nil {
		return 0, fmt.Errorf("postgres: webhook enqueue: %w", err)
	}
	eps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Endpoint, error) { return scanEndpoint(r) })
	if err != nil || len(eps) == 0 {
		return 0, err
	}
	batch := &pgx.Batch{}
	for _, ep := range eps {
		id, b := body(ep)
		batch.Queue(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, show_id, body, status,
			next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, 'PENDING', now())
			ON CONFLICT (endpoint_id, event_id) DO NOTHING`, id, ep.ID, e.ID, e.Type, e.ShowID, string(b))
	}
	res := s.pool.SendBatch(ctx, batch)
	defer res.Close()
	n := 0
	for range eps {
		tag, err := res.Exec()
		if err != nil {
			return n, fmt.Errorf("postgres: webhook enqueue: %w", err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

const deliveryColumns = `d.id, d.endpoint_id, d.event_id, d.event_type, d.show_id, d.body, d.status, d.attempts,
	d.next_attempt_at, COALESCE(d.last_status, 0), d.last_error, d.created_at, d.delivered_at`

func scanDelivery(row pgx.Row, extra ...any) (webhook.Delivery, error) {
	var d webhook.Delivery
	var body string
	var delivered *time.Time
	err := row.Scan(append([]any{&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.ShowID, &body, &d.Status,
		&d.Attempts, &d.NextAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &delivered}, extra...)...)
	d.Body = []byte(body)
	d.NextAt, d.CreatedAt = d.NextAt.UTC(), d.CreatedAt.UTC()
	if delivered != nil {
		d.DeliveredAt = delivered.UTC()
	}
	return d, err
}

// Claim implements webhook.Store. SKIP LOCKED and the lease let every replica's sender share the work without two
// sending one delivery at once; a sender that dies mid-attempt leaves it to be sent again after the lease.
func (s *Store) Claim(ctx context.Context, lease time.Duration, limit int) ([]webhook.Delivery, error) {
	rows, err := s.pool.Query(ctx, `UPDATE webhook_deliveries d
		SET next_attempt_at = now() + make_interval(secs => $1), attempts = d.attempts + 1
		FROM webhook_endpoints e
		WHERE d.id IN (SELECT d2.id FROM webhook_deliveries d2 JOIN webhook_endpoints e2 ON e2.id = d2.endpoint_id
				WHERE d2.status = 'PENDING' AND d2.next_attempt_at <= now() AND e2.deleted_at IS NULL
				ORDER BY d2.next_attempt_at LIMIT $2 FOR UPDATE OF d2 SKIP LOCKED)
			AND e.id = d.endpoint_id
		RETURNING `+deliveryColumns+`, e.url, e.secret,
			CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret ELSE '' END`, lease.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhook deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) {
		var url, secret, previous string
		d, err := scanDelivery(r, &url, &secret, &previous)
		d.URL, d.Secret, d.PreviousSecret = url, secret, previous
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhook deliveries: %w", err)
	}
	return ds, nil
}

// Record implements webhook.Store.
func (s *Store) Record(ctx context.Context, id string, r webhook.Result) error {
	var err error
	switch {
	case r.OK:
		_, err = s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'DELIVERED', last_status = $2, last_error = '',
			delivered_at = now() WHERE id = $1`, id, r.StatusCode)
	default:
		status := webhook.Pending
		if r.GiveUp {
			status = webhook.Failed
		}
		_, err = s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = $2, last_status = NULLIF($3, 0),
			last_error = $4, next_attempt_at = $5 WHERE id = $1 AND status = 'PENDING'`, id, string(status),
			r.StatusCode, r.Error, r.Next)
	}
	if err != nil {
		return fmt.Errorf("postgres: record webhook attempt: %w", err)
	}
	return nil
}

// Deliveries implements webhook.Store.
func (s *Store) Deliveries(ctx context.Context, endpointID string, limit int) ([]webhook.Delivery, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`, endpointID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: webhook deliveries: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("webhook endpoint %s: %w", endpointID, booking.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.endpoint_id = $1
		ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: webhook deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: webhook deliveries: %w", err)
	}
	return ds, nil
}

// Replay implements webhook.Store.
func (s *Store) Replay(ctx context.Context, endpointID, deliveryID string) (webhook.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `UPDATE webhook_deliveries d SET status = 'PENDING', attempts = 0,
			next_attempt_at = now(), delivered_at = NULL
		WHERE d.id = $1 AND d.endpoint_id = $2 RETURNING `+deliveryColumns, deliveryID, endpointID))
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.Delivery{}, fmt.Errorf("webhook delivery %s: %w", deliveryID, booking.ErrNotFound)
	}
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("postgres: replay webhook delivery: %w", err)
	}
	return d, nil
}
