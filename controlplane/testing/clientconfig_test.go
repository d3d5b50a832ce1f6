package testing

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestClientConfigForIsAuthorizedByRBAC is how a test checks a controller's
// RBAC: a user the server has never heard of is forbidden until a binding
// names it, or one of its groups.
func TestClientConfigForIsAuthorizedByRBAC(t *testing.T) {
	s := StartTestServer(t, Options{CRDPaths: []string{"testdata/crds/widgets.yaml"}})
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(s.ClientConfig)

	for _, tc := range []struct {
		name    string
		user    string
		groups  []string
		subject rbacv1.Subject
	}{
		{name: "user", user: "alice", subject: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}},
		{name: "group", user: "bob", groups: []string{"widget-readers"}, subject: rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "widget-readers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := s.ClientConfigFor(tc.user, tc.groups...)
			if err != nil {
				t.Fatal(err)
			}
			widgets := dynamic.NewForConfigOrDie(cfg).Resource(widgetsV1)
			namespace := "rbac-" + tc.name
			if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := widgets.Namespace(namespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("%s lists widgets without a binding: want Forbidden, got %v", tc.user, err)
			}

			role := &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "widget-reader"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{widgetsV1.Group}, Resources: []string{widgetsV1.Resource}, Verbs: []string{"get", "list", "watch"}}},
			}
			if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "widget-reader"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   []rbacv1.Subject{tc.subject},
			}
			if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The authorizer reads bindings from an informer: allowed soon,
			// not at once.
			var lastErr error
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, lastErr = widgets.Namespace(namespace).List(ctx, metav1.ListOptions{})
				return lastErr == nil, nil
			}); err != nil {
				t.Fatalf("%s lists widgets after the binding: %v (last error: %v)", tc.user, err, lastErr)
			}

			// The binding grants what it says and no more.
			if _, err := widgets.Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("%s lists widgets in another namespace: want Forbidden, got %v", tc.user, err)
			}
			if _, err := widgets.Namespace(namespace).Create(ctx, widget("w", 1), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("%s creates a widget with a read-only role: want Forbidden, got %v", tc.user, err)
			}
		})
	}
}
