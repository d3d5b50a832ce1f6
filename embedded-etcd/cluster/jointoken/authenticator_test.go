package jointoken

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Bearer tokens that are not join tokens' credentials are left to the
// other authenticators, without a request.
func TestAuthenticatorIgnoresOtherTokens(t *testing.T) {
	store, _, client, _ := newTestStore(t, storedSecret("token1", testSecret, t0.Add(time.Hour), UsageJoin, false))
	authn := newAuthenticator(store)
	for _, token := range []string{
		"",
		"abcdef.0123456789abcdef", // a bootstrap token
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", // a JWT
		"token1",
		"token1." + testSecret + ".x",
		"TOKEN1." + strings.ToUpper(testSecret),
		"sgcp::" + caPEMHash + "::token1." + testSecret, // the printed form is not the credential
	} {
		resp, ok, err := authn.AuthenticateToken(context.Background(), token)
		if resp != nil || ok || err != nil {
			t.Errorf("AuthenticateToken(%q): %v, %t, %v; want nil, false, nil", token, resp, ok, err)
		}
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("%d requests to the API for tokens that are not join tokens", n)
	}
}

func TestAuthenticator(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		// want is the error, "" when the token authenticates.
		want string
	}{
		{name: "valid", token: "token1." + testSecret},
		{name: "single-use", token: "single." + testSecret},
		{name: "wrong secret", token: "token1.vutsrqponmlkjihgfedcba9876543210", want: "invalid join token: unknown token ID or wrong secret"},
		{name: "unknown", token: "nosuch." + testSecret, want: "invalid join token: unknown token ID or wrong secret"},
		{name: "a secret of another type", token: "other1." + testSecret, want: "invalid join token: unknown token ID or wrong secret"},
		{name: "expired", token: "expird." + testSecret, want: "invalid join token: token expird expired at 2026-03-01T12:00:00Z"},
		{name: "not for joining", token: "nousag." + testSecret, want: `invalid join token: token nousag is not for "join"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _, client, deletes := newTestStore(t,
				storedSecret("token1", testSecret, t0.Add(time.Hour), UsageJoin, false),
				storedSecret("single", testSecret, t0.Add(time.Hour), UsageJoin, true),
				storedSecret("expird", testSecret, t0, UsageJoin, false),
				storedSecret("nousag", testSecret, t0.Add(time.Hour), "", false),
				foreignSecret("other1"),
			)
			resp, ok, err := newAuthenticator(store).AuthenticateToken(context.Background(), tc.token)
			if tc.want != "" {
				if resp != nil || ok || err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("AuthenticateToken: %v, %t, %v; want an error containing %q", resp, ok, err, tc.want)
				}
			} else {
				if !ok || err != nil {
					t.Fatalf("AuthenticateToken: %t, %v", ok, err)
				}
				id, _, _ := strings.Cut(tc.token, ".")
				u := resp.User
				if u.GetName() != "system:join-token:"+id || strings.Join(u.GetGroups(), ",") != "system:join-tokens,"+user.AllAuthenticated {
					t.Errorf("user %q in %q", u.GetName(), u.GetGroups())
				}
			}
			// It writes nothing: a single-use token stays for Use, an
			// expired one for Use or Create to delete.
			if d := deletes(); len(d) != 0 {
				t.Errorf("AuthenticateToken deleted %d objects", len(d))
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("AuthenticateToken made a %s request", a.GetVerb())
				}
			}
		})
	}
}
