package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// Served by default, in both discoveries (kubectl api-resources reads
// them), with the APIService the aggregator registers for it.
func TestStorageVersionMigrationAPIIsServed(t *testing.T) {
	s := sharedServer(t)
	expectGroupDiscovered(t, s.ClientConfig, svmv1.GroupName, true)
	name := svmv1.SchemeGroupVersion.Version + "." + svmv1.GroupName
	if _, err := aggregatorclient.NewForConfigOrDie(s.ClientConfig).ApiregistrationV1().APIServices().Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("APIService %s: %v", name, err)
	}
}

// --runtime-config turns the API off; the migrator then does not start,
// and says so only at V(2): it is healthy, and never obtains its identity.
func TestStorageVersionMigrationAPIOffByRuntimeConfig(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: []string{"--runtime-config=storagemigration.k8s.io/v1=false"}})
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	expectGroupDiscovered(t, s.ClientConfig, svmv1.GroupName, false)
	name := svmv1.SchemeGroupVersion.Version + "." + svmv1.GroupName
	if _, err := aggregatorclient.NewForConfigOrDie(s.ClientConfig).ApiregistrationV1().APIServices().Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("APIService %s with the API off: want NotFound, got %v", name, err)
	}
	// Controllers run once every controller is built: the namespace
	// controller at work proves the migrator's start is behind us.
	newNamespace(t, client, "barrier")
	deleteNamespaceAndWait(t, client, "barrier")
	if want, report := "[+]controller-"+names.StorageVersionMigratorController+" ok", livez(t, s.ClientConfig); !strings.Contains(report, want) {
		t.Errorf("/livez?verbose lacks %q:\n%s", want, report)
	}
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(t.Context(), names.StorageVersionMigratorController, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("with its API off, the migrator obtained its identity: %v", err)
	}
}

// A StorageVersionMigration rewrites every object of its resource and
// succeeds, for a built-in resource and for a custom one; for the latter,
// the CRD then records only the current storage version, so that the old
// version can be dropped from the CRD.
func TestStorageVersionMigrationSucceeds(t *testing.T) {
	s := sharedServer(t)
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	for _, tc := range []struct {
		name     string
		resource metav1.GroupResource
		// objects creates objects of the resource, before the migration,
		// and returns the client to write more with.
		objects func(t *testing.T) resourceClient
		// after checks what the migration leaves behind.
		after func(t *testing.T, c resourceClient)
	}{
		{
			name:     "configmaps",
			resource: metav1.GroupResource{Resource: "configmaps"},
			objects: func(t *testing.T) resourceClient {
				newNamespace(t, client, "svm-configmaps")
				c := configMaps(t, s.ClientConfig, "svm-configmaps")
				for i := range 3 {
					obj := &unstructured.Unstructured{}
					obj.SetGroupVersionKind(c.gvk)
					obj.SetName(fmt.Sprintf("cm-%d", i))
					obj.Object["data"] = map[string]any{"index": fmt.Sprint(i)}
					if _, err := c.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				return c
			},
			after: func(t *testing.T, c resourceClient) {
				for i := range 3 {
					obj, err := c.Get(t.Context(), fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if got, _, _ := unstructured.NestedString(obj.Object, "data", "index"); got != fmt.Sprint(i) {
						t.Errorf("after the migration %s holds data.index %q, want %q", obj.GetName(), got, fmt.Sprint(i))
					}
				}
			},
		},
		{
			name:     "custom resources",
			resource: metav1.GroupResource{Group: migrantGroup, Resource: "migrants"},
			objects: func(t *testing.T) resourceClient {
				newNamespace(t, client, "svm-custom")
				c := migrants(t, s.ClientConfig, "svm-custom")
				for i := range 3 {
					c.createOwned(t, fmt.Sprintf("m-%d", i))
				}
				// Stored as v1 so far; v2 stores from now on.
				setStorageVersion(t, s.ClientConfig, "migrants."+migrantGroup, "v2")
				return c
			},
			after: func(t *testing.T, _ resourceClient) {
				waitForStoredVersions(t, s.ClientConfig, "migrants."+migrantGroup, "v2")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.objects(t)
			migration := &svmv1.StorageVersionMigration{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "svm-"},
				Spec:       svmv1.StorageVersionMigrationSpec{Resource: tc.resource},
			}
			migration, err := client.StoragemigrationV1().StorageVersionMigrations().Create(t.Context(), migration, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create the migration of %s: %v", tc.resource, err)
			}
			waitForMigration(t, client, migration.Name, func() {
				// The migrator waits until the garbage collector's cache
				// of the resource has caught up with the resource
				// version the migration starts from. A write does that
				// at once; a resource nobody writes to waits for the
				// next watch bookmark and the migrator's retry backoff,
				// 40 to 80 s (upstream's tests write too).
				nudge := c.createOwned(t, "nudge")
				if err := c.Delete(t.Context(), nudge.GetName(), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			tc.after(t, c)
		})
	}
}

// waitForMigration waits until the migration succeeds; once it has a
// resource version to start from, it calls nudge, once.
func waitForMigration(t *testing.T, client kubernetes.Interface, name string, nudge func()) {
	t.Helper()
	var last *svmv1.StorageVersionMigration
	nudged := false
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if last, err = client.StoragemigrationV1().StorageVersionMigrations().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if failed := meta.FindStatusCondition(last.Status.Conditions, string(svmv1.MigrationFailed)); failed != nil && failed.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("the migration failed: %s", failed.Message)
		}
		if meta.IsStatusConditionTrue(last.Status.Conditions, string(svmv1.MigrationSucceeded)) {
			return true, nil
		}
		if last.Status.ResourceVersion != "" && !nudged {
			nudge()
			nudged = true
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("migration %s did not succeed (last status %+v): %v", name, last.Status, err)
	}
}

const migrantGroup = "svm.example.com"

// migrants creates a namespaced CRD in svm.example.com with two versions,
// v1 stored and v2 served, and returns a client of its v1 once served.
func migrants(t *testing.T, cfg *rest.Config, ns string) resourceClient {
	t.Helper()
	validation := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "migrants." + migrantGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: migrantGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "migrants", Kind: "Migrant"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: validation},
				{Name: "v2", Served: true, Schema: validation},
			},
		},
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	gvr := schema.GroupVersionResource{Group: migrantGroup, Version: "v1", Resource: "migrants"}
	resource := dynamic.NewForConfigOrDie(cfg).Resource(gvr)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := resource.List(ctx, metav1.ListOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("CRD %s never served: %v", crd.Name, err)
	}
	return resourceClient{ResourceInterface: resource.Namespace(ns), gvk: gvr.GroupVersion().WithKind("Migrant")}
}

// setStorageVersion makes version the storage version of the CRD.
func setStorageVersion(t *testing.T, cfg *rest.Config, name, version string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
	if _, err := crds.Update(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("make %s the storage version of %s: %v", version, name, err)
	}
}

// waitForStoredVersions waits until the CRD's status.storedVersions is want.
func waitForStoredVersions(t *testing.T, cfg *rest.Config, name string, want ...string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	var stored []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		stored = crd.Status.StoredVersions
		return slices.Equal(stored, want), nil
	})
	if err != nil {
		t.Fatalf("CRD %s stores %v, want %v: %v", name, stored, want, err)
	}
}
