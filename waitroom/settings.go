package waitroom

import (
	"context"
	"fmt"

	"github.com/flashseat/flashseat/shared/admission"
)

// Settings returns a show's settings and counters.
func (s *Service) Settings(ctx context.Context, show string) (admission.Settings, Counts, error) {
	if !ValidID(show) {
		return admission.Settings{}, Counts{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	st, err := s.queues.Settings(ctx, show)
	if err != nil {
		return st, Counts{}, err
	}
	c, err := s.store.Counts(ctx, show)
	c.ActiveUsers = c.Active
	c.Lanes = laneFigures(st.Lanes, c.Lanes)
	switch st.QueueMode() {
	case admission.ModeAlways:
		c.Engaged = true
	case admission.ModeOff:
		c.Engaged = false
	}
	return st, c, err
}

// laneFigures is each of the settings' lanes, in order, with its share in force and the store's figures for the
// lane of that name (the store's copy of the shares may be a second behind; names change only while nobody
// waits, so a name finds its own lines).
func laneFigures(lanes admission.Lanes, figures []LaneCounts) []LaneCounts {
	out := []LaneCounts{}
	for _, l := range lanes.List() {
		f := LaneCounts{Name: l.Name}
		for _, c := range figures {
			if c.Name == l.Name {
				f = c
			}
		}
		f.Share = l.Share
		out = append(out, f)
	}
	return out
}

// UpdateSettings changes a show's settings with fn, which must validate what it returns: recorded first, then
// cached, and every replica applies them within a tick. Turning a queue on commits its shuffle seed first, so the
// commitment is public before anyone can join. It returns the settings before and after.
func (s *Service) UpdateSettings(ctx context.Context, show string, fn func(admission.Settings) (admission.Settings, error)) (old, now admission.Settings, err error) {
	if !ValidID(show) {
		return old, now, fmt.Errorf("%w: show id", ErrInvalid)
	}
	old, now, err = s.queues.Update(ctx, show, func(cur admission.Settings) (admission.Settings, error) {
		next, err := fn(cur)
		if err != nil {
			return next, err
		}
		if next.Enabled {
			if err := s.ensureSeed(ctx, show); err != nil {
				return next, err
			}
		}
		return next, nil
	})
	if err != nil {
		return old, now, err
	}
	s.Hub.Touch(show)
	return old, now, nil
}
