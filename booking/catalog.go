package booking

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/flashseat/flashseat/shared/salereport"
)

// CatalogStore is the ledger as the Catalog needs it.
type CatalogStore interface {
	CreateVenue(ctx context.Context, v *Venue) error // assigns the venue's and its halls' IDs
	CreateEvent(ctx context.Context, e *Event) error
	CreateShow(ctx context.Context, s *Show) error // ErrNotFound wrapped when the event or hall is unknown
	Show(ctx context.Context, id string) (Show, error)
	Layout(ctx context.Context, showID string) ([]Seat, error)
	Search(ctx context.Context, q Search) ([]EventShows, error)
	Revenue(ctx context.Context, showID string) (int64, error)
	// ShowFigures lists the shows not started before now minus six hours, soonest first, with revenue,
	// confirmed bookings and payment failures (the console's overview); counts are left to the caller.
	ShowFigures(ctx context.Context, now time.Time) ([]ShowOverview, error)
	// SetSaleStart moves a show's sale opening and returns the show as now recorded.
	SetSaleStart(ctx context.Context, showID string, at time.Time) (Show, error)
	// CloseSale records the sale of a show closed at the given time and returns the show as now recorded.
	CloseSale(ctx context.Context, showID string, at time.Time) (Show, error)
	// BumpEpoch starts a new fencing epoch for the show and returns it.
	BumpEpoch(ctx context.Context, showID string) (int64, error)
	SoldSeats(ctx context.Context, showID string) ([]string, error)
	// SaleReport reads a show's sale from the record as of now (ErrNotFound for a show it does not know).
	SaleReport(ctx context.Context, showID string, now time.Time) (salereport.Report, error)
	// SummariseSales stores the report of every show started before now that has none yet; it returns how many.
	SummariseSales(ctx context.Context, now time.Time) (int, error)
	// ForgetFans deletes the per-fan rows of the shows summarised before before; it returns how many shows.
	ForgetFans(ctx context.Context, before time.Time) (int, error)
}

// CatalogBoard is Redis as the Catalog needs it: the seats' live status, the shows' counters and ShowInfo, and
// the fencing epoch a show starts with.
type CatalogBoard interface {
	// Status reads the live state of the given seats in one round trip: held and sold flags by seat.
	Status(ctx context.Context, showID string, seatIDs []string) (held, sold map[string]bool, err error)
	// Available reads the available count of each show's ShowInfo in one round trip; shows without one are
	// missing from the result.
	Available(ctx context.Context, showIDs []string) (map[string]int, error)
	// Counters returns the show's hold and conflict counters.
	Counters(ctx context.Context, showID string) (holds, conflicts int64, err error)
	// AddConflicts adds n to the show's conflict counter.
	AddConflicts(ctx context.Context, showID string, n int64) error
	// PublishInfo writes the show's ShowInfo hash and, when announce is set, publishes the show's id on the
	// availability channel.
	PublishInfo(ctx context.Context, s Show, c Counts, now time.Time, announce bool) error
	// AnnounceShow tells every replica that an operator changed the show's definition (sale opening, close).
	AnnounceShow(ctx context.Context, showID string) error
	// SetEpoch installs a fencing epoch (and the show's sold seats) after Redis was found without one.
	SetEpoch(ctx context.Context, showID string, epoch int64, sold []string) error
}

// Catalog is venues, events and shows: creating them, finding them, and each show's seats with their live status
// and counts. Shows and layouts are cached (catalog_cache.go), the seats' status too (seatcache.go); the shows'
// ShowInfo, the availability the waiting room and the catalog pages read, is rewritten from here (showinfo.go).
type Catalog struct {
	store CatalogStore
	locks CatalogBoard
	gate  Admitter // for QueueEnabled; nil: no show has a queue
	cfg   Config
	log   *slog.Logger
	seats *seatCache

	cache     catalogCache
	mu        sync.Mutex
	dirty     map[string]bool   // shows whose ShowInfo needs a rewrite
	published map[string]Counts // the counts last written to each show's ShowInfo
}

// CreateVenue validates and stores a venue with its halls' seat layouts.
func (s *Catalog) CreateVenue(ctx context.Context, v Venue) (Venue, error) {
	var err error
	if v.Name, err = text("name", v.Name, true, maxName); err != nil {
		return Venue{}, err
	}
	if v.City, err = text("city", v.City, true, 100); err != nil {
		return Venue{}, err
	}
	if len(v.Halls) == 0 || len(v.Halls) > maxHalls {
		return Venue{}, Unprocessable("a venue needs 1 to %d halls", maxHalls)
	}
	hallNames := map[string]bool{}
	for i := range v.Halls {
		h := &v.Halls[i]
		if h.Name, err = text(fmt.Sprintf("halls[%d].name", i), h.Name, true, 100); err != nil {
			return Venue{}, err
		}
		if hallNames[h.Name] {
			return Venue{}, Unprocessable("hall %q is listed twice", clip(h.Name))
		}
		hallNames[h.Name] = true
		if len(h.Rows) == 0 || len(h.Rows) > maxRows {
			return Venue{}, Unprocessable("hall %q needs 1 to %d rows", clip(h.Name), maxRows)
		}
		rows := map[string]bool{}
		for j, r := range h.Rows {
			switch {
			case !validRow(r.Label):
				return Venue{}, Unprocessable("halls[%d].rows[%d].row must be 1 to 3 capital letters", i, j)
			case rows[r.Label]:
				return Venue{}, Unprocessable("row %s is listed twice in hall %q", r.Label, clip(h.Name))
			case r.Seats < 1 || r.Seats > maxSeatsPerRow:
				return Venue{}, Unprocessable("row %s needs 1 to %d seats", r.Label, maxSeatsPerRow)
			case !validCategory(r.Category):
				return Venue{}, Unprocessable("row %s: category must be capital letters, digits or _", r.Label)
			}
			rows[r.Label] = true
		}
		if h.Seats() > maxHallSeats {
			return Venue{}, Unprocessable("hall %q has more than %d seats", clip(h.Name), maxHallSeats)
		}
	}
	if err := s.store.CreateVenue(ctx, &v); err != nil {
		return Venue{}, err
	}
	return v, nil
}

// CreateEvent validates and stores an event.
func (s *Catalog) CreateEvent(ctx context.Context, e Event) (Event, error) {
	var err error
	if e.Title, err = text("title", e.Title, true, maxName); err != nil {
		return Event{}, err
	}
	if e.Kind, err = text("kind", e.Kind, true, 40); err != nil {
		return Event{}, err
	}
	if e.Genre, err = text("genre", e.Genre, false, 60); err != nil {
		return Event{}, err
	}
	if e.Language, err = text("language", e.Language, false, 60); err != nil {
		return Event{}, err
	}
	if e.DurationMinutes < 1 || e.DurationMinutes > 24*60 {
		return Event{}, Unprocessable("durationMinutes must be 1 to 1440")
	}
	if err := s.store.CreateEvent(ctx, &e); err != nil {
		return Event{}, err
	}
	return e, nil
}

// CreateShow validates and stores a show, then publishes its ShowInfo so the waiting room knows when its sale
// opens. Every seat category of the hall needs a price, and no price may name a category the hall lacks.
func (s *Catalog) CreateShow(ctx context.Context, sh Show) (Show, error) {
	switch {
	case !ValidID(sh.EventID):
		return Show{}, Unprocessable("eventId is required")
	case !ValidID(sh.HallID):
		return Show{}, Unprocessable("hallId is required")
	case sh.StartsAt.IsZero():
		return Show{}, Unprocessable("startsAt is required")
	case sh.SaleStartsAt.IsZero():
		return Show{}, Unprocessable("saleStartsAt is required")
	case sh.SaleStartsAt.After(sh.StartsAt):
		return Show{}, Unprocessable("saleStartsAt must not be after startsAt")
	case sh.StartsAt.Year() > 9999 || sh.StartsAt.Year() < 2000:
		return Show{}, Unprocessable("startsAt is out of range")
	case sh.SaleStartsAt.Year() < 2000:
		return Show{}, Unprocessable("saleStartsAt is out of range")
	case !validCurrency(sh.Currency):
		return Show{}, Unprocessable("currency must be an ISO 4217 code like INR")
	case len(sh.Prices) == 0:
		return Show{}, Unprocessable("prices are required")
	}
	for cat, p := range sh.Prices {
		if !validCategory(cat) {
			return Show{}, Unprocessable("price category %q is not a category name", clip(cat))
		}
		if p < 0 || p > maxPrice {
			return Show{}, Unprocessable("price of %s is out of range", cat)
		}
	}
	sh.StartsAt, sh.SaleStartsAt = sh.StartsAt.UTC(), sh.SaleStartsAt.UTC()
	if err := s.store.CreateShow(ctx, &sh); err != nil {
		return Show{}, err
	}
	// Install the fencing epoch now rather than when the sale's first crowd arrives.
	if err := s.restoreShow(ctx, sh.ID); err != nil {
		s.log.WarnContext(ctx, "install fencing epoch", "show", sh.ID, "err", err)
	}
	if err := s.PublishInfo(ctx, sh.ID); err != nil {
		s.log.WarnContext(ctx, "publish new show info", "show", sh.ID, "err", err)
	}
	return sh, nil
}

// Search lists events with their upcoming shows matching the filters, with live availability.
func (s *Catalog) Search(ctx context.Context, q Search) ([]EventShows, error) {
	if q.Limit <= 0 || q.Limit > 100 {
		q.Limit = 100
	}
	var err error
	if q.City, err = text("city", q.City, false, 100); err != nil {
		return nil, Invalid("city is not acceptable text")
	}
	if q.Query, err = text("q", q.Query, false, 100); err != nil {
		return nil, Invalid("q is not acceptable text")
	}
	if q.Genre, err = text("genre", q.Genre, false, 60); err != nil {
		return nil, Invalid("genre is not acceptable text")
	}
	if q.Language, err = text("language", q.Language, false, 60); err != nil {
		return nil, Invalid("language is not acceptable text")
	}
	res, err := s.store.Search(MayLag(ctx), q)
	if err != nil {
		return nil, err
	}
	// Availability from the shows' ShowInfo (rewritten within InfoCoalesce of every change), all in one round
	// trip; a show whose ShowInfo Redis lost is counted live.
	var ids []string
	for _, e := range res {
		for _, sh := range e.Shows {
			ids = append(ids, sh.ID)
		}
	}
	avail, err := s.locks.Available(ctx, ids)
	if err != nil {
		s.log.WarnContext(ctx, "catalog availability", "err", err)
		avail = map[string]int{}
	}
	for i := range res {
		for j := range res[i].Shows {
			sh := &res[i].Shows[j]
			if n, ok := avail[sh.ID]; ok {
				sh.AvailableSeats = n
			} else if c, err := s.counts(ctx, sh.ID, time.Second); err == nil {
				sh.AvailableSeats = c.Available
			} else {
				s.log.WarnContext(ctx, "catalog availability", "show", sh.ID, "err", err)
			}
			sh.QueueEnabled = s.QueueEnabled(ctx, sh.ID)
		}
	}
	return res, nil
}

// QueueEnabled reports whether the show's waiting room is on; an unreadable state reads as off.
func (s *Catalog) QueueEnabled(ctx context.Context, showID string) bool {
	if s.gate == nil {
		return false
	}
	on, err := s.gate.Enabled(ctx, showID)
	return err == nil && on
}

// ShowDetail returns a show with its live counts.
func (s *Catalog) ShowDetail(ctx context.Context, id string) (Show, Counts, error) {
	if !ValidID(id) {
		return Show{}, Counts{}, fmt.Errorf("show %q: %w", clip(id), ErrNotFound)
	}
	sh, err := s.Show(ctx, id)
	if err != nil {
		return Show{}, Counts{}, err
	}
	c, err := s.counts(ctx, id, 250*time.Millisecond)
	if err != nil {
		return Show{}, Counts{}, err
	}
	return sh, c, nil
}

// SeatMap returns every seat of the show with its live status, read from Redis in one round trip.
func (s *Catalog) SeatMap(ctx context.Context, showID string) ([]SeatState, error) {
	if !ValidID(showID) {
		return nil, fmt.Errorf("show %q: %w", clip(showID), ErrNotFound)
	}
	layout, err := s.Layout(ctx, showID)
	if err != nil {
		return nil, err
	}
	held, sold, err := s.status(ctx, showID, layout)
	if err != nil {
		return nil, err
	}
	out := make([]SeatState, len(layout))
	for i, st := range layout {
		out[i] = SeatState{Seat: st, Status: SeatAvailable}
		switch {
		case sold[st.ID]:
			out[i].Status = SeatBooked
		case held[st.ID]:
			out[i].Status = SeatHeld
		}
	}
	return out, nil
}

func (s *Catalog) status(ctx context.Context, showID string, layout []Seat) (held, sold map[string]bool, err error) {
	ids := make([]string, len(layout))
	for i, st := range layout {
		ids[i] = st.ID
	}
	return s.locks.Status(ctx, showID, ids)
}

// Counts returns the show's live seat counts.
func (s *Catalog) Counts(ctx context.Context, showID string) (Counts, error) {
	return s.counts(ctx, showID, 0)
}

// counts is Counts from a snapshot no older than maxAge (0: read now).
func (s *Catalog) counts(ctx context.Context, showID string, maxAge time.Duration) (Counts, error) {
	layout, index, err := s.layoutIndex(ctx, showID)
	if err != nil {
		return Counts{}, err
	}
	var sn *snapshot
	if maxAge > 0 {
		sn, err = s.seats.snapshot(ctx, showID, layout, maxAge)
	}
	if err == nil && sn == nil {
		var held, sold map[string]bool
		held, sold, err = s.status(ctx, showID, layout)
		sn = newSnapshot(time.Now(), layout, index, held, sold)
	}
	if err != nil {
		return Counts{}, err
	}
	return sn.counts(), nil
}

// Stats is the operator's view of a show.
func (s *Catalog) Stats(ctx context.Context, showID string) (Stats, error) {
	if !ValidID(showID) {
		return Stats{}, fmt.Errorf("show %q: %w", clip(showID), ErrNotFound)
	}
	c, err := s.Counts(ctx, showID)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Counts: c}
	if st.Revenue, err = s.store.Revenue(MayLag(ctx), showID); err != nil {
		return Stats{}, err
	}
	if st.HoldsTotal, st.ConflictsTotal, err = s.locks.Counters(ctx, showID); err != nil {
		return Stats{}, err
	}
	return st, nil
}
