package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// Against a real API server: what the fake clientset cannot show (the
// delete's preconditions, a Secret of our type accepted and immutable) and
// the RBAC bootstrap's effect (every server with an embedded etcd has it).
func TestAgainstAPIServer(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{
		Customize: func(o *controlplane.Options) error {
			// The tokens need none of the controllers.
			o.Controllers = nil
			return nil
		},
	})
	client, err := kubernetes.NewForConfig(s.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	store := jointoken.NewStore(client)
	caHash := jointoken.CAHash(s.Server.PKI().CA.Cert)

	t.Run("concurrent uses of a single-use token", func(t *testing.T) {
		token, _, err := store.Create(ctx, caHash, jointoken.CreateOptions{TTL: time.Minute, SingleUse: true})
		if err != nil {
			t.Fatal(err)
		}
		const uses = 8
		errs := make([]error, uses)
		var wg sync.WaitGroup
		for i := range uses {
			wg.Go(func() { _, errs[i] = store.Use(ctx, token.ID, token.Secret, jointoken.UsageJoin) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, jointoken.ErrInvalid):
				t.Errorf("a losing use: %v", err)
			}
		}
		if won != 1 {
			t.Errorf("%d of %d concurrent uses succeeded, want 1: %v", won, uses, errs)
		}
	})

	t.Run("create, list, authenticate, delete", func(t *testing.T) {
		token, _, err := store.Create(ctx, caHash, jointoken.CreateOptions{TTL: time.Minute, Description: "node-2"})
		if err != nil {
			t.Fatal(err)
		}
		secret, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "join-token-"+token.ID, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if secret.Immutable == nil || !*secret.Immutable {
			t.Error("the token's Secret is not immutable")
		}
		infos, err := store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(infos, func(i jointoken.Info) bool {
			return i.ID == token.ID && i.Description == "node-2" && !i.Created.IsZero()
		}) {
			t.Errorf("List: %+v, want token %s", infos, token.ID)
		}
		resp, ok, err := jointoken.NewAuthenticator(client).AuthenticateToken(ctx, token.Credential())
		if !ok || err != nil || resp.User.GetName() != jointoken.UserPrefix+token.ID {
			t.Errorf("AuthenticateToken: %v, %t, %v", resp, ok, err)
		}
		if err := store.Delete(ctx, token.ID); err != nil {
			t.Fatal(err)
		}
		if err := store.Delete(ctx, token.ID); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("deleting again: %v", err)
		}
	})

	// The tokens' group may POST to the join path, and do nothing else.
	t.Run("RBAC", func(t *testing.T) {
		allowed := func(attrs authorizationv1.SubjectAccessReviewSpec) bool {
			attrs.User, attrs.Groups = jointoken.UserPrefix+"abcdef", []string{jointoken.Group, "system:authenticated"}
			review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return review.Status.Allowed
		}
		join := authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: jointoken.JoinPath, Verb: "post"}}
		// The bootstrap's binding takes effect within a moment.
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return allowed(join), nil
		}); err != nil {
			t.Fatalf("the join tokens' group may not POST to %s", jointoken.JoinPath)
		}
		for _, denied := range []authorizationv1.SubjectAccessReviewSpec{
			{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: jointoken.JoinPath, Verb: "get"}},
			{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/join/v2", Verb: "post"}},
			{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"}},
			{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "namespaces"}},
		} {
			if allowed(denied) {
				t.Errorf("the join tokens' group may %+v %+v", denied.NonResourceAttributes, denied.ResourceAttributes)
			}
		}
	})
}
