package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A show's rows, table by table, in the order foreign keys allow inserting them. where selects the show's rows
// ($1 is the show id); serial tables get new ids where they land, since another shard's sequence handed out the
// old ones (the order of a show's rows, all that their ids mean, is kept by copying in id order).
type showTable struct {
	name, where string
	serial      bool
}

// catalogTables are the show's catalog rows a shard keeps a copy of: its venue, hall, seats, event and itself.
var catalogTables = []showTable{
	{name: "venues", where: `id = (SELECT h.venue_id FROM halls h JOIN shows s ON s.hall_id = h.id WHERE s.id = $1)`},
	{name: "halls", where: `id = (SELECT hall_id FROM shows WHERE id = $1)`},
	{name: "seats", where: `hall_id = (SELECT hall_id FROM shows WHERE id = $1)`},
	{name: "events", where: `id = (SELECT event_id FROM shows WHERE id = $1)`},
	{name: "shows", where: `id = $1`},
}

const ofShowsBookings = `booking_id IN (SELECT id FROM bookings WHERE show_id = $1)`

// ledgerTables are the rows of a show that live on its shard: booking's, and the queue's record, outbox, bypass
// codes and audit entries (pgshard places those alike). A table another package adds with a show's rows
// is listed here too, or a move leaves its rows behind (TestMoveShowCarriesEveryShowTable finds one missing).
var ledgerTables = []showTable{
	{name: "bookings", where: `show_id = $1`},
	{name: "seat_fences", where: `show_id = $1`},
	{name: "sold_seats", where: `show_id = $1`},
	{name: "payment_attempts", where: ofShowsBookings},
	{name: "payments", where: ofShowsBookings},
	{name: "tickets", where: `show_id = $1`},
	{name: "resale_listings", where: `show_id = $1`}, // before refunds: a payout names its listing
	{name: "resale_holds", where: ofShowsBookings},
	{name: "refunds", where: ofShowsBookings},
	{name: "ticket_transfers", where: `show_id = $1`},
	{name: "show_ticket_policies", where: `show_id = $1`},
	{name: "waitlist", where: `show_id = $1`, serial: true},
	{name: "idempotency_keys", where: `scope = 'hold:' || $1`},
	{name: "outbox", where: `payload ->> 'showId' = $1`, serial: true},
	{name: "queue_settings", where: `show_id = $1`},
	{name: "queue_grants", where: `show_id = $1`},
	{name: "queue_joins", where: `show_id = $1`},
	{name: "queue_refusals", where: `show_id = $1`},
	{name: "sale_reports", where: `show_id = $1`},
	{name: "queue_phase", where: `show_id = $1`},
	{name: "queue_outbox", where: `show_id = $1`, serial: true},
	{name: "waitroom_queues", where: `show_id = $1`},
	{name: "bypass_codes", where: `show_id = $1`},
	{name: "bypass_uses", where: `code_hash IN (SELECT code_hash FROM bypass_codes WHERE show_id = $1)`},
	{name: "audit_log", where: `show_id = $1`, serial: true},
}

// CopyShowCatalog copies showID's catalog rows from the catalog to a shard; rows the shard has already are kept.
func CopyShowCatalog(ctx context.Context, catalog, shard *pgxpool.Pool, showID string) error {
	return copyTables(ctx, catalog, shard, showID, catalogTables)
}

// MoveShow moves every row of showID from one shard to another: the show's catalog rows are copied from the
// catalog, and its ledger in one transaction on the new shard, counted there against the old, then deleted from the old shard in one
// transaction. It must run while nothing writes the show (its booking replicas stopped, or the show's shard not
// yet serving it: see docs/SCALING.md); a count that differs, a row the new shard already has, stops it with the
// old shard untouched. It returns how many rows moved.
func MoveShow(ctx context.Context, catalog, from, to *pgxpool.Pool, showID string) (int, error) {
	if err := CopyShowCatalog(ctx, catalog, to, showID); err != nil {
		return 0, err
	}
	moved := 0
	err := pgx.BeginTxFunc(ctx, from, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(src pgx.Tx) error {
		return pgx.BeginFunc(ctx, to, func(dst pgx.Tx) error {
			for _, t := range ledgerTables {
				n, err := copyTable(ctx, src, dst, t, showID, false)
				if err != nil {
					return err
				}
				moved += n
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: move show %s: %w", showID, err)
	}
	err = pgx.BeginFunc(ctx, from, func(tx pgx.Tx) error {
		removed := 0
		for _, t := range slices.Backward(ledgerTables) {
			tag, err := tx.Exec(ctx, `DELETE FROM `+t.name+` WHERE `+t.where, showID)
			if err != nil {
				return err
			}
			removed += int(tag.RowsAffected())
		}
		if removed != moved {
			return fmt.Errorf("%d rows copied but %d to delete: the show was written during the move", moved, removed)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: move show %s: old shard kept its rows (the new one has a copy): %w", showID, err)
	}
	return moved, nil
}

func copyTables(ctx context.Context, from, to *pgxpool.Pool, showID string, tables []showTable) error {
	err := pgx.BeginTxFunc(ctx, from, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(src pgx.Tx) error {
		return pgx.BeginFunc(ctx, to, func(dst pgx.Tx) error {
			for _, t := range tables {
				if _, err := copyTable(ctx, src, dst, t, showID, true); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: copy show %s: %w", showID, err)
	}
	return nil
}

// copyTable copies t's rows of showID through JSON, which carries every column type as it is; keep skips rows
// the destination has (catalog copies), and otherwise such a row is an error. It returns the rows copied.
func copyTable(ctx context.Context, src, dst pgx.Tx, t showTable, showID string, keep bool) (int, error) {
	q, err := dst.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, t.name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	cols, err := pgx.CollectRows(q, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	if t.serial {
		cols = slices.DeleteFunc(cols, func(c string) bool { return c == "id" })
	}
	order := ""
	if t.serial {
		order = " ORDER BY id"
	}
	q, err = src.Query(ctx, `SELECT to_jsonb(t) FROM `+t.name+` t WHERE `+t.where+order, showID)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	rows, err := pgx.CollectRows(q, pgx.RowTo[[]byte])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	list := strings.Join(cols, ", ")
	conflict := ""
	if keep {
		conflict = " ON CONFLICT DO NOTHING"
	}
	insert := `INSERT INTO ` + t.name + ` (` + list + `) SELECT ` + list + ` FROM jsonb_populate_record(NULL::` +
		t.name + `, $1::jsonb)` + conflict
	for _, r := range rows {
		if _, err := dst.Exec(ctx, insert, r); err != nil {
			return 0, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return len(rows), nil
}
