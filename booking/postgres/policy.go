package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// tierJSON is a refund tier as show_ticket_policies.refund_tiers stores it.
type tierJSON struct {
	UntilHoursBefore float64 `json:"untilHoursBefore"`
	Percent          int     `json:"percent"`
}

// TicketPolicy implements booking.PolicyStore.
func (s *Store) TicketPolicy(ctx context.Context, showID string) (booking.TicketPolicy, bool, error) {
	var raw []byte
	var fee int64
	var tp booking.TicketPolicy
	err := s.pool.QueryRow(ctx, `SELECT refund_tiers, refund_fee_minor, transfers_enabled, transfer_cutoff_hours,
		resale_enabled, resale_max_price_ratio, resale_fee_percent, ticket_codes
		FROM show_ticket_policies WHERE show_id = $1`, showID).Scan(&raw, &fee, &tp.Transfer.Enabled, &tp.Transfer.CutoffHours,
		&tp.Resale.Enabled, &tp.Resale.MaxPriceRatio, &tp.Resale.FeePercent, &tp.Codes)
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.TicketPolicy{}, false, nil
	}
	if err != nil {
		return booking.TicketPolicy{}, false, fmt.Errorf("postgres: ticket policy of %s: %w", showID, err)
	}
	if raw != nil {
		var tiers []tierJSON
		if err := json.Unmarshal(raw, &tiers); err != nil {
			return booking.TicketPolicy{}, false, fmt.Errorf("postgres: ticket policy of %s: %w", showID, err)
		}
		rp := booking.RefundPolicy{FeeMinor: fee, Tiers: make([]booking.RefundTier, len(tiers))}
		for i, t := range tiers {
			rp.Tiers[i] = booking.RefundTier{UntilHoursBefore: t.UntilHoursBefore, Percent: t.Percent}
		}
		tp.Refund = &rp
	}
	return tp, true, nil
}

// SetTicketPolicy implements booking.PolicyStore.
func (s *Store) SetTicketPolicy(ctx context.Context, showID string, tp booking.TicketPolicy) error {
	var raw []byte
	var fee int64
	if tp.Refund != nil {
		tiers := make([]tierJSON, len(tp.Refund.Tiers))
		for i, t := range tp.Refund.Tiers {
			tiers[i] = tierJSON{UntilHoursBefore: t.UntilHoursBefore, Percent: t.Percent}
		}
		raw, _ = json.Marshal(tiers)
		fee = tp.Refund.FeeMinor
	}
	codes := tp.Codes
	if codes == "" {
		codes = booking.CodesStatic
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO show_ticket_policies (show_id, refund_tiers, refund_fee_minor,
		transfers_enabled, transfer_cutoff_hours, resale_enabled, resale_max_price_ratio, resale_fee_percent,
		ticket_codes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (show_id) DO UPDATE
		SET refund_tiers = EXCLUDED.refund_tiers, refund_fee_minor = EXCLUDED.refund_fee_minor,
		transfers_enabled = EXCLUDED.transfers_enabled, transfer_cutoff_hours = EXCLUDED.transfer_cutoff_hours,
		resale_enabled = EXCLUDED.resale_enabled, resale_max_price_ratio = EXCLUDED.resale_max_price_ratio,
		resale_fee_percent = EXCLUDED.resale_fee_percent, ticket_codes = EXCLUDED.ticket_codes, updated_at = now()`,
		showID, raw, fee, tp.Transfer.Enabled, tp.Transfer.CutoffHours, tp.Resale.Enabled, tp.Resale.MaxPriceRatio,
		tp.Resale.FeePercent, codes)
	if err != nil {
		return fmt.Errorf("postgres: set ticket policy of %s: %w", showID, err)
	}
	return nil
}
