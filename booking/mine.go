package booking

import "context"

// A fan's own bookings, as the "My bookings" page and the checkout and ticket pages show them.

// MaxListed bounds how many bookings Mine returns: a fan buys a handful; the bound keeps a runaway account cheap.
const MaxListed = 100

// Mine lists the user's bookings, newest first.
func (s *Holds) Mine(ctx context.Context, userID string) ([]Booking, error) {
	return s.store.BookingsOf(MayLag(ctx), userID, MaxListed)
}

// SeatsOf returns the layout's seats named by ids (with category and price), in the order given; a seat the
// layout does not have is left out.
func (s *Catalog) SeatsOf(ctx context.Context, showID string, ids []string) ([]Seat, error) {
	layout, index, err := s.layoutIndex(ctx, showID)
	if err != nil {
		return nil, err
	}
	out := make([]Seat, 0, len(ids))
	for _, id := range ids {
		if i, ok := index[id]; ok {
			out = append(out, layout[i])
		}
	}
	return out, nil
}
