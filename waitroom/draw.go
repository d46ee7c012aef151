package waitroom

import (
	"context"
	"fmt"
	"time"
)

func (s *Service) ensureSeed(ctx context.Context, show string) error {
	if s.seeded.Contains(show) {
		return nil
	}
	fresh, err := NewSeed()
	if err != nil {
		return err
	}
	// The record first: the commitment must survive Redis, or a rebuilt queue would draw with another seed.
	seed, err := s.record.SaveSeed(ctx, show, fresh)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, err := s.store.Seed(ctx, show, seed); err != nil {
		return err
	}
	s.seeded.Add(show, struct{}{})
	return nil
}

// Draw writes the pre-opening order if the sale has opened and nobody has yet. One replica draws at a time (a
// lock); a crash mid-way is harmless because the order is a pure function of seed and pool, so the next
// drawer writes the same tickets again.
func (s *Service) Draw(ctx context.Context, show string) (err error) {
	ok, err := s.store.DrawLock(ctx, show, drawLockTTL)
	if err != nil {
		return err
	}
	if !ok {
		return ErrDrawPending
	}
	defer func() {
		if err != nil { // let the next replica try at once rather than when the lock expires
			_ = s.store.DrawUnlock(context.WithoutCancel(ctx), show)
		}
	}()
	seed, err := s.store.Seed(ctx, show, "")
	if err != nil {
		return err
	}
	pool, err := s.store.PreJoiners(ctx, show)
	if err != nil {
		return err
	}
	ordered, err := Order(seed, pool)
	if err != nil {
		return err
	}
	// The draw hands out len(ordered) tickets at once: reserve them in the record first, on each line of a
	// partitioned queue its own.
	lines, err := s.store.Lines(ctx, show, ordered)
	if err != nil {
		return err
	}
	for line, fans := range lines {
		c, err := s.record.Reserve(ctx, line, 0, int64(len(fans)))
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if err := s.store.SetCeiling(ctx, line, c); err != nil {
			return lineErr(line, show, err)
		}
	}
	digest := ParticipantsDigest(ordered)
	if err := s.store.Place(ctx, show, ordered, digest); err != nil {
		return err
	}
	if err := s.record.SaveDraw(ctx, show, int64(len(ordered)), digest); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// drawLockTTL bounds how long a drawer that died, or whose writes a Redis failover lost while its lock survived,
// keeps the others from drawing: until the draw is written nobody is admitted. With a minute, a master killed
// at the opening held a whole sale's queue still for its fans' patience. A draw that outlasts it is only done
// twice: the second drawer writes the same tickets, and place.lua ignores any chunk after the finish.
const drawLockTTL = 10 * time.Second

// Fairness returns the show's shuffle record: the seed only once the draw is written.
func (s *Service) Fairness(ctx context.Context, show string) (Fairness, error) {
	if !ValidID(show) {
		return Fairness{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	if ok, err := s.store.Exists(ctx, show); err != nil {
		return Fairness{}, err
	} else if !ok {
		return Fairness{}, ErrUnknownShow
	}
	if err := s.ensureSeed(ctx, show); err != nil {
		return Fairness{}, err
	}
	f, err := s.store.Fairness(ctx, show)
	if err != nil {
		return Fairness{}, err
	}
	if !f.Drawn {
		f.Seed = ""
	}
	f.Recipe = Recipe
	return f, nil
}
