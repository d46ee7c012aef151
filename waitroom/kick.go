package waitroom

import (
	"context"
	"fmt"

	"github.com/flashseat/flashseat/shared/admission"
)

// Kick revokes the admission jti of show (an operator's decision): its token is refused from then on.
func (s *Service) Kick(ctx context.Context, show, jti string) (admission.Grant, error) {
	if !ValidID(show) || jti == "" || len(jti) > 128 {
		return admission.Grant{}, fmt.Errorf("%w: show or admission id", ErrInvalid)
	}
	return s.queues.Kick(ctx, show, jti)
}

// KickUser revokes every live admission of user to show, including one this replica's store holds that the
// record may not have yet.
func (s *Service) KickUser(ctx context.Context, show, user string) ([]admission.Grant, error) {
	if err := check(show, user); err != nil {
		return nil, err
	}
	gs, err := s.store.Grants(ctx, show, []string{user})
	if err != nil {
		return nil, err
	}
	var extra []admission.Grant
	for _, g := range gs {
		extra = append(extra, admission.Grant{ShowID: show, JTI: g.JTI, UserID: g.UserID, IssuedAt: g.IssuedAt,
			ExpiresAt: g.ExpiresAt})
	}
	return s.queues.KickUser(ctx, show, user, extra...)
}
