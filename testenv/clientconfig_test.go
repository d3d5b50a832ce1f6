package testenv

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A user from ClientConfigFor is who the server says it is, and may do
// nothing until a binding names one of its groups.
func TestClientConfigForAuthenticatesAUserThatRBACAuthorizes(t *testing.T) {
	t.Parallel()
	s := StartTestServer(t, Options{})
	ctx := t.Context()
	cfg, err := s.ClientConfigFor("alice", "developers", "on call")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != s.ClientConfig.Host || bytes.Equal(cfg.CertData, s.ClientConfig.CertData) || cfg.QPS != -1 {
		t.Errorf("ClientConfigFor: host %s, the admin's certificate %v, QPS %v; want %s, another certificate, -1",
			cfg.Host, bytes.Equal(cfg.CertData, s.ClientConfig.CertData), cfg.QPS, s.ClientConfig.Host)
	}
	alice := kubernetes.NewForConfigOrDie(cfg)

	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if user := review.Status.UserInfo; user.Username != "alice" || !containsAll(user.Groups, "developers", "on call", "system:authenticated") {
		t.Errorf("the server takes the user for %q in %q, want alice in developers, on call and system:authenticated", user.Username, user.Groups)
	}

	if _, err := alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice lists namespaces without a binding: want Forbidden, got %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "developers-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "developers"}},
	}
	if _, err := kubernetes.NewForConfigOrDie(s.ClientConfig).RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// view lets a user read namespaced objects, not namespaces.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("alice, in group developers bound to view, lists config maps: %v", err)
	}

	// The command's own error, when it refuses.
	if _, err := s.ClientConfigFor(""); err == nil || !strings.Contains(err.Error(), "kubeconfig user needs NAME") {
		t.Errorf("ClientConfigFor with no user name: %v, want the kubeconfig user command's error", err)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
