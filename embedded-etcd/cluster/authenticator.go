package cluster

import (
	"net/http"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/union"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// joinTokenCacheTTL is how long an answer of the join-token authenticator is kept.
const joinTokenCacheTTL = 10 * time.Second

// JoinTokenAuthenticator authenticates join tokens, ahead of next (the API
// server's other authenticators), and hands the token on to the
// JoinHandler in the request's context (WithToken): the authentication
// filter removes the Authorization header, and the handler uses the token.
func JoinTokenAuthenticator(client kubernetes.Interface, next authenticator.Request) authenticator.Request {
	// A token-shaped bearer costs a Secret lookup; anybody can send one.
	// Answers are cached briefly, as upstream caches webhook token
	// reviews; the join handler checks the token again when it uses it.
	tokens := tokencache.New(jointoken.NewAuthenticator(client), true, joinTokenCacheTTL, joinTokenCacheTTL)
	join := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		credential, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, false, nil
		}
		credential = strings.TrimSpace(credential)
		resp, ok, err := tokens.AuthenticateToken(req.Context(), credential)
		if ok {
			// The filter serves the request it was given, with the user
			// added to its context: add the token too.
			*req = *req.WithContext(WithToken(req.Context(), credential))
		}
		return resp, ok, err
	})
	return union.New(join, next)
}
