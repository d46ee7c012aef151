package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/webhook"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
)

// Each method of Shards below names where its rows live: the catalog, the show's shard, the shard an id names,
// or every shard (a cross-show read or a worker's sweep, shards.go).

var (
	_ booking.Store         = (*Shards)(nil)
	_ booking.PaymentStore  = (*Shards)(nil)
	_ booking.WaitlistStore = (*Shards)(nil)
	_ booking.ContactStore  = (*Shards)(nil)
	_ webhook.Store         = (*Shards)(nil)
)

// The catalog.

func (s *Shards) CreateVenue(ctx context.Context, v *booking.Venue) error {
	return s.catalog.CreateVenue(ctx, v)
}
func (s *Shards) CreateEvent(ctx context.Context, e *booking.Event) error {
	return s.catalog.CreateEvent(ctx, e)
}

// CreateShow records the show in the catalog, then copies its catalog rows to its shard, where its bookings'
// foreign keys and the ledger's joins find them. A show whose copy failed is taken out of the catalog again, so
// no show is on sale that its shard does not know.
func (s *Shards) CreateShow(ctx context.Context, sh *booking.Show) error {
	if err := s.catalog.CreateShow(ctx, sh); err != nil {
		return err
	}
	if err := CopyShowCatalog(ctx, s.catalog.pool, s.At(sh.ID).pool, sh.ID); err != nil {
		if _, derr := s.catalog.pool.Exec(context.WithoutCancel(ctx), `DELETE FROM shows WHERE id = $1`, sh.ID); derr != nil {
			s.log.ErrorContext(ctx, "show left in the catalog without its shard", "show", sh.ID, "err", derr)
		}
		return err
	}
	return nil
}
func (s *Shards) Show(ctx context.Context, id string) (booking.Show, error) {
	return s.catalog.Show(ctx, id)
}
func (s *Shards) Layout(ctx context.Context, showID string) ([]booking.Seat, error) {
	return s.catalog.Layout(ctx, showID)
}
func (s *Shards) Search(ctx context.Context, q booking.Search) ([]booking.EventShows, error) {
	return s.catalog.Search(ctx, q)
}
func (s *Shards) UpcomingShows(ctx context.Context, now time.Time) ([]string, error) {
	return s.catalog.UpcomingShows(ctx, now)
}
func (s *Shards) SetSaleStart(ctx context.Context, showID string, at time.Time) (booking.Show, error) {
	return s.catalog.SetSaleStart(ctx, showID, at)
}
func (s *Shards) CloseSale(ctx context.Context, showID string, at time.Time) (booking.Show, error) {
	return s.catalog.CloseSale(ctx, showID, at)
}

// ShowFigures lists the shows from the catalog with their figures summed from every shard.
func (s *Shards) ShowFigures(ctx context.Context, now time.Time) ([]booking.ShowOverview, error) {
	shows, err := s.catalog.ShowFigures(ctx, now)
	if err != nil {
		return nil, err
	}
	figures, err := all(ctx, s, func(ctx context.Context, st *Store) ([]booking.ShowOverview, error) {
		return st.ShowFigures(ctx, now)
	})
	if err != nil {
		return nil, err
	}
	byShow := make(map[string]booking.ShowOverview, len(figures))
	for _, f := range figures {
		byShow[f.Show.ID] = f
	}
	for i, o := range shows {
		f := byShow[o.Show.ID]
		shows[i].Revenue, shows[i].Confirmed, shows[i].PaymentFailures = f.Revenue, f.Confirmed, f.PaymentFailures
	}
	return shows, nil
}

// The show's shard.

func (s *Shards) BumpEpoch(ctx context.Context, showID string) (int64, error) {
	return s.At(showID).BumpEpoch(ctx, showID)
}
func (s *Shards) SoldSeats(ctx context.Context, showID string) ([]string, error) {
	return s.At(showID).SoldSeats(ctx, showID)
}
func (s *Shards) Revenue(ctx context.Context, showID string) (int64, error) {
	return s.At(showID).Revenue(ctx, showID)
}
func (s *Shards) CreateHold(ctx context.Context, b *booking.Booking) error {
	return s.At(b.ShowID).CreateHold(ctx, b)
}
func (s *Shards) ExpireDue(ctx context.Context, showID string, now time.Time, limit int) ([]booking.Booking, error) {
	if showID != "" {
		return s.At(showID).ExpireDue(ctx, showID, now, limit)
	}
	return sweep(ctx, s, "expire", func(ctx context.Context, st *Store) ([]booking.Booking, error) {
		return st.ExpireDue(ctx, "", now, limit)
	})
}

// idempotencyStore is where an idempotency record lives: a hold's scope names its show (booking's holdScope).
func (s *Shards) idempotencyStore(scope string) *Store {
	if show, ok := strings.CutPrefix(scope, "hold:"); ok {
		return s.At(show)
	}
	return s.catalog
}
func (s *Shards) BeginIdempotent(ctx context.Context, userID, scope, key, hash string, staleAfter time.Duration) (booking.IdempotencyRecord, bool, error) {
	return s.idempotencyStore(scope).BeginIdempotent(ctx, userID, scope, key, hash, staleAfter)
}
func (s *Shards) FinishIdempotent(ctx context.Context, userID, scope, key, resultID string) error {
	return s.idempotencyStore(scope).FinishIdempotent(ctx, userID, scope, key, resultID)
}
func (s *Shards) AbortIdempotent(ctx context.Context, userID, scope, key string) error {
	return s.idempotencyStore(scope).AbortIdempotent(ctx, userID, scope, key)
}
func (s *Shards) JoinWaitlist(ctx context.Context, j booking.WaitlistJoin, now time.Time) (booking.WaitlistEntry, error) {
	return s.At(j.ShowID).JoinWaitlist(ctx, j, now)
}
func (s *Shards) WaitlistEntry(ctx context.Context, showID, userID string) (booking.WaitlistEntry, error) {
	return s.At(showID).WaitlistEntry(ctx, showID, userID)
}
func (s *Shards) LeaveWaitlist(ctx context.Context, showID, userID string) (booking.WaitlistEntry, error) {
	return s.At(showID).LeaveWaitlist(ctx, showID, userID)
}
func (s *Shards) Waitlist(ctx context.Context, showID string) ([]booking.WaitlistEntry, error) {
	return s.At(showID).Waitlist(ctx, showID)
}
func (s *Shards) LockOffers(ctx context.Context, showID string) (func(), error) {
	return s.At(showID).LockOffers(ctx, showID)
}
func (s *Shards) InLine(ctx context.Context, showID string) ([]booking.WaitlistEntry, error) {
	return s.At(showID).InLine(ctx, showID)
}
func (s *Shards) RecordOffer(ctx context.Context, entryID int64, b booking.Booking, passed []int64) (bool, error) {
	return s.At(b.ShowID).RecordOffer(ctx, entryID, b, passed)
}

// The shard an id names.

func (s *Shards) Booking(ctx context.Context, id string) (booking.Booking, error) {
	st, err := s.byID("booking", id)
	if err != nil {
		return booking.Booking{}, err
	}
	return st.Booking(ctx, id)
}
func (s *Shards) Confirm(ctx context.Context, id string) (booking.Booking, error) {
	st, err := s.byID("booking", id)
	if err != nil {
		return booking.Booking{}, err
	}
	return st.Confirm(ctx, id)
}
func (s *Shards) Cancel(ctx context.Context, id, userID string) (booking.Booking, error) {
	st, err := s.byID("booking", id)
	if err != nil {
		return booking.Booking{}, err
	}
	return st.Cancel(ctx, id, userID)
}
func (s *Shards) Expire(ctx context.Context, id string) (booking.Booking, error) {
	st, err := s.byID("booking", id)
	if err != nil {
		return booking.Booking{}, err
	}
	return st.Expire(ctx, id)
}
func (s *Shards) Extend(ctx context.Context, id string, until time.Time) error {
	st, err := s.byID("booking", id)
	if err != nil {
		return err
	}
	return st.Extend(ctx, id, until)
}
func (s *Shards) SetStatus(ctx context.Context, id string, from []booking.Status, to booking.Status) (booking.Booking, error) {
	st, err := s.byID("booking", id)
	if err != nil {
		return booking.Booking{}, err
	}
	return st.SetStatus(ctx, id, from, to)
}

// LockOwners asks each shard for the ids it keeps.
func (s *Shards) LockOwners(ctx context.Context, ids []string) ([]booking.Booking, error) {
	byShard := make(map[*Store][]string)
	for _, id := range ids {
		if st, err := s.byID("booking", id); err == nil {
			byShard[st] = append(byShard[st], id)
		}
	}
	var out []booking.Booking
	for st, ids := range byShard {
		bs, err := st.LockOwners(ctx, ids)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}
func (s *Shards) BookingLanguage(ctx context.Context, bookingID string) (string, error) {
	st, err := s.byID("booking", bookingID)
	if err != nil {
		return "", err
	}
	return st.BookingLanguage(ctx, bookingID)
}
func (s *Shards) EndOffer(ctx context.Context, bookingID string, to booking.WaitlistStatus) (booking.WaitlistEntry, bool, error) {
	st, err := s.byID("booking", bookingID)
	if err != nil {
		return booking.WaitlistEntry{}, false, nil // no booking of that id, so no offer either
	}
	return st.EndOffer(ctx, bookingID, to)
}
func (s *Shards) IsOffer(ctx context.Context, bookingID string) (bool, error) {
	st, err := s.byID("booking", bookingID)
	if err != nil {
		return false, nil
	}
	return st.IsOffer(ctx, bookingID)
}

// Across shows: a fan's bookings, newest first, from every shard.

func (s *Shards) BookingsOf(ctx context.Context, userID string, limit int) ([]booking.Booking, error) {
	return newest(all(ctx, s, func(ctx context.Context, st *Store) ([]booking.Booking, error) {
		return st.BookingsOf(ctx, userID, limit)
	}))(limit)
}
func (s *Shards) UserBookings(ctx context.Context, userID string, limit int) ([]booking.Booking, error) {
	return newest(all(ctx, s, func(ctx context.Context, st *Store) ([]booking.Booking, error) {
		return st.UserBookings(ctx, userID, limit)
	}))(limit)
}

// newest sorts bookings gathered from several shards newest first and keeps limit of them.
func newest(bs []booking.Booking, err error) func(limit int) ([]booking.Booking, error) {
	return func(limit int) ([]booking.Booking, error) {
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(bs, func(a, b booking.Booking) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		if limit > 0 && len(bs) > limit {
			bs = bs[:limit]
		}
		return bs, nil
	}
}

// The catalog's other tenants: a fan's contact and notifications, operators' webhooks.

func (s *Shards) SetContact(ctx context.Context, c booking.Contact) error {
	return s.catalog.SetContact(ctx, c)
}
func (s *Shards) Contact(ctx context.Context, userID string) (booking.Contact, error) {
	return s.catalog.Contact(ctx, userID)
}
func (s *Shards) SetContactCode(ctx context.Context, userID string, hash []byte, expires time.Time) error {
	return s.catalog.SetContactCode(ctx, userID, hash, expires)
}
func (s *Shards) ConfirmContact(ctx context.Context, userID string, hash []byte, now time.Time, tries int) (bool, error) {
	return s.catalog.ConfirmContact(ctx, userID, hash, now, tries)
}
func (s *Shards) BeginNotification(ctx context.Context, eventID, userID, kind string) (bool, error) {
	return s.catalog.BeginNotification(ctx, eventID, userID, kind)
}
func (s *Shards) FinishNotification(ctx context.Context, eventID string, sendErr error) error {
	return s.catalog.FinishNotification(ctx, eventID, sendErr)
}
func (s *Shards) RollSecret(ctx context.Context, id, secret string, graceUntil time.Time) (webhook.Endpoint, error) {
	return s.catalog.RollSecret(ctx, id, secret, graceUntil)
}
func (s *Shards) CreateEndpoint(ctx context.Context, e webhook.Endpoint) error {
	return s.catalog.CreateEndpoint(ctx, e)
}
func (s *Shards) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	return s.catalog.Endpoints(ctx)
}
func (s *Shards) DeleteEndpoint(ctx context.Context, id string) error {
	return s.catalog.DeleteEndpoint(ctx, id)
}
func (s *Shards) Enqueue(ctx context.Context, e booking.LifecycleEvent, body func(webhook.Endpoint) (string, []byte)) (int, error) {
	return s.catalog.Enqueue(ctx, e, body)
}
func (s *Shards) Claim(ctx context.Context, lease time.Duration, limit int) ([]webhook.Delivery, error) {
	return s.catalog.Claim(ctx, lease, limit)
}
func (s *Shards) Record(ctx context.Context, id string, r webhook.Result) error {
	return s.catalog.Record(ctx, id, r)
}
func (s *Shards) Deliveries(ctx context.Context, endpointID string, limit int) ([]webhook.Delivery, error) {
	return s.catalog.Deliveries(ctx, endpointID, limit)
}
func (s *Shards) Replay(ctx context.Context, endpointID, deliveryID string) (webhook.Delivery, error) {
	return s.catalog.Replay(ctx, endpointID, deliveryID)
}

// The outbox: each shard's, relayed and pruned shard by shard, so a shard that is down holds back only its own
// shows' events.

func (s *Shards) Outbox() eventstream.Source { return shardsOutbox{s} }

type shardsOutbox struct{ s *Shards }

func (o shardsOutbox) Relay(ctx context.Context, limit int, publish func(eventstream.Event) error) (int, error) {
	publish = pgshard.Serial(publish)
	ns, err := sweep(ctx, o.s, "outbox", func(ctx context.Context, st *Store) ([]int, error) {
		n, err := st.Outbox().Relay(ctx, limit, publish)
		return []int{n}, err
	})
	return sum(ns), err
}
func (o shardsOutbox) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	return o.s.PruneOutbox(ctx, before, limit)
}
func (s *Shards) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	ns, err := sweep(ctx, s, "outbox prune", func(ctx context.Context, st *Store) ([]int, error) {
		n, err := st.PruneOutbox(ctx, before, limit)
		return []int{n}, err
	})
	return sum(ns), err
}
func (s *Shards) RelayOutbox(ctx context.Context, limit int, publish func(booking.OutboxEvent) error) (int, error) {
	publish = pgshard.Serial(publish)
	ns, err := sweep(ctx, s, "outbox", func(ctx context.Context, st *Store) ([]int, error) {
		n, err := st.RelayOutbox(ctx, limit, publish)
		return []int{n}, err
	})
	return sum(ns), err
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}
