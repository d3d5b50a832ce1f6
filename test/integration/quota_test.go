package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// quotaUsageTimeout covers the controller's full resync (30 s), after which
// usage of resources discovered late is calculated too.
const quotaUsageTimeout = 45 * time.Second

// waitForQuotaUsage waits until the controller has calculated the usage of
// every resource the quota limits, which admission needs to enforce it.
func waitForQuotaUsage(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, quotaUsageTimeout, true, func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for r := range q.Spec.Hard {
			if _, ok := q.Status.Used[r]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s usage never calculated: %v", ns, name, err)
	}
}

func createQuota(t *testing.T, client kubernetes.Interface, ns string, hard corev1.ResourceList) {
	t.Helper()
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(t.Context(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "counts"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForQuotaUsage(t, client, ns, "counts")
}

func TestConfigMapCountQuotaRejectsTheFourth(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	newNamespace(t, client, "quota-cm")
	// kube-root-ca.crt, published in every namespace, counts too: let it
	// arrive first so the quota's first count includes it.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps("quota-cm").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("kube-root-ca.crt never published: %v", err)
	}
	createQuota(t, client, "quota-cm", corev1.ResourceList{"count/configmaps": resource.MustParse("3")})
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, quotaUsageTimeout, true, func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas("quota-cm").Get(ctx, "counts", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		used := q.Status.Used["count/configmaps"]
		return used.Value() == 1, nil
	})
	if err != nil {
		t.Fatalf("quota never counted kube-root-ca.crt: %v", err)
	}

	var created int
	for i := range 5 {
		_, err := client.CoreV1().ConfigMaps("quota-cm").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		if err == nil {
			created++
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") || !strings.Contains(err.Error(), "count/configmaps") {
			t.Fatalf("configmap %d: want a Forbidden 'exceeded quota' error naming count/configmaps, got %v", i, err)
		}
		break
	}
	list, err := client.CoreV1().ConfigMaps("quota-cm").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d configmaps in the namespace (%d created by the test), want exactly the quota's 3", len(list.Items), created)
	}
}

func TestCustomResourceCountQuota(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	things := createCRD(t, s.ClientConfig, "things", "Thing")
	newNamespace(t, client, "quota-cr")
	thing := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gadgetGVK("Thing"))
		u.SetName(name)
		return u
	}
	// An object exists when the quota is set, as when a quota is added to a
	// namespace in use; the controller counts it once it has discovered
	// the CRD's resource.
	if _, err := things.Namespace("quota-cr").Create(ctx, thing("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("first thing: %v", err)
	}
	createQuota(t, client, "quota-cr", corev1.ResourceList{"count/things.gc.example.com": resource.MustParse("1")})
	_, err := things.Namespace("quota-cr").Create(ctx, thing("second"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "count/things.gc.example.com") {
		t.Fatalf("second thing: want Forbidden naming count/things.gc.example.com, got %v", err)
	}
}
