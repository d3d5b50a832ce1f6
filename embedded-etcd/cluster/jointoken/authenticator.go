package jointoken

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// NewAuthenticator authenticates join tokens' credentials ("Authorization:
// Bearer <ID>.<secret>") of usage UsageJoin, as the user UserPrefix+ID in
// Group. Any other bearer token is left to the other authenticators
// (nil, false, nil) without a request to the API: the server asks every
// authenticator about every token. It reads a token, it does not use it
// up: the join handler calls Store.Use, which does.
func NewAuthenticator(client kubernetes.Interface) authenticator.Token {
	return newAuthenticator(&Store{client: client, clock: clock.RealClock{}})
}

func newAuthenticator(s *Store) authenticator.Token {
	return authenticator.TokenFunc(func(ctx context.Context, token string) (*authenticator.Response, bool, error) {
		id, secret, ok := parseCredential(token)
		if !ok {
			return nil, false, nil
		}
		// The error says why (expired, say) in the server's log; the
		// client gets 401 either way.
		_, info, err := s.lookup(ctx, id, secret)
		if err == nil {
			err = s.usable(info, UsageJoin)
		}
		if err != nil {
			return nil, false, err
		}
		// In system:authenticated, as upstream adds it to every user
		// (this authenticator stands in front of that union): API
		// priority and fairness classifies requests by it, and RBAC
		// grants it no more than discovery.
		return &authenticator.Response{User: &user.DefaultInfo{
			Name:   UserPrefix + id,
			Groups: []string{Group, user.AllAuthenticated},
		}}, true, nil
	})
}
