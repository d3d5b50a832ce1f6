package integration

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

	controlplanev1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

// aggregatedNamespace is the namespace of the service references of the
// aggregated APIs of these tests; it need not exist.
const aggregatedNamespace = "svcref-aggregated"

// aggregatedGroup is the API group served by the service named name.
func aggregatedGroup(name string) string { return name + ".svcref.example.com" }

// createAPIService registers v1alpha1 of the group of the service
// {aggregatedNamespace, name}, port 443, checking the server's certificate
// against caBundle (nil: not checked). It is deleted when the test ends,
// unless the test did already.
func createAPIService(t *testing.T, apiServices apiregistrationclient.APIServiceInterface, name string, caBundle []byte) *apiregistrationv1.APIService {
	t.Helper()
	group := aggregatedGroup(name)
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group:                 group,
			Version:               "v1alpha1",
			Service:               &apiregistrationv1.ServiceReference{Namespace: aggregatedNamespace, Name: name, Port: ptr[int32](443)},
			CABundle:              caBundle,
			InsecureSkipTLSVerify: caBundle == nil,
			GroupPriorityMinimum:  1000,
			VersionPriority:       15,
		},
	}
	created, err := apiServices.Create(t.Context(), apiService, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create APIService %s: %v", apiService.Name, err)
	}
	t.Cleanup(func() {
		if err := apiServices.Delete(context.Background(), apiService.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			t.Errorf("delete APIService %s: %v", apiService.Name, err)
		}
	})
	return created
}

// waitForAvailable waits up to timeout until the Available condition of
// the APIService name has status and reason, and returns it.
func waitForAvailable(t *testing.T, apiServices apiregistrationclient.APIServiceInterface, name string, status apiregistrationv1.ConditionStatus, reason string, timeout time.Duration) apiregistrationv1.APIServiceCondition {
	t.Helper()
	var last apiregistrationv1.APIServiceCondition
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		apiService, err := apiServices.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range apiService.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				last = c
			}
		}
		return last.Status == status && last.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("APIService %s never Available=%s/%s within %s (last: %s/%s %q): %v", name, status, reason, timeout, last.Status, last.Reason, last.Message, err)
	}
	return last
}

// discoveryServer answers the discovery of groupVersion, with no resources,
// as an aggregated API server does.
func discoveryServer(groupVersion string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+groupVersion, func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(&metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: groupVersion,
			APIResources: []metav1.APIResource{},
		})
	})
	return mux
}

// An APIService whose server cannot be reached says why in its Available
// condition, in upstream's reasons, with a message telling what to fix; and
// it turns available once its server answers, without anyone touching it.
// The control plane is one of its own: an unavailable APIService fails
// discovery, and so namespace deletion, for the whole server.
func TestAPIServiceAvailabilityByServiceLocation(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{})
	apiServices := aggregatorclient.NewForConfigOrDie(s.ClientConfig).ApiregistrationV1().APIServices()

	cases := []struct {
		// name is the service's, and the prefix of the group.
		name string
		// locatedPort is the port its ServiceLocation lists, leading to a
		// port nothing listens on; none if 0.
		locatedPort int32
		reason      string
		// message is what the condition's message must say, given the
		// port the ServiceLocation leads to.
		message func(target int32) string
	}{{
		name:        "nothing-listening",
		locatedPort: 443,
		reason:      "FailedDiscoveryCheck",
		message:     func(target int32) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(target))) },
	}, {
		name:    "no-location",
		reason:  "ServiceNotFound",
		message: func(int32) string { return "create a ServiceLocation named no-location." + aggregatedNamespace },
	}, {
		name:        "no-port",
		locatedPort: 8443,
		reason:      "ServicePortError",
		message:     func(int32) string { return "ServiceLocation no-port." + aggregatedNamespace + " lists no port 443" },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := unusedLoopbackPort(t)
			if tc.locatedPort != 0 {
				createServiceLocation(t, s.ClientConfig, aggregatedNamespace, tc.name,
					controlplanev1alpha1.ServiceLocationPort{Port: tc.locatedPort, TargetPort: target})
			}
			apiService := createAPIService(t, apiServices, tc.name, nil)
			got := waitForAvailable(t, apiServices, apiService.Name, apiregistrationv1.ConditionFalse, tc.reason, wait.ForeverTestTimeout)
			if want := tc.message(target); !strings.Contains(got.Message, want) {
				t.Fatalf("Available=False/%s says %q, want it to say %q", tc.reason, got.Message, want)
			}
		})
	}

	t.Run("recovers when its server answers", func(t *testing.T) {
		const name = "recovering"
		groupVersion := aggregatedGroup(name) + "/v1alpha1"
		tlsConfig, caBundle := serviceServingTLS(t, name+"."+aggregatedNamespace+".svc")
		target := unusedLoopbackPort(t)
		createServiceLocation(t, s.ClientConfig, aggregatedNamespace, name, port443(target))
		created := time.Now()
		apiService := createAPIService(t, apiServices, name, caBundle)
		waitForAvailable(t, apiServices, apiService.Name, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck", wait.ForeverTestTimeout)

		// The server starts at the address the ServiceLocation gives: no
		// object changes, the controller's retries find it. The port was
		// free a moment ago; the kernel does not hand it out again so soon.
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(target))))
		if err != nil {
			t.Fatalf("listening on the port of ServiceLocation %s.%s, free a moment ago: %v", name, aggregatedNamespace, err)
		}
		serveTLS(t, ln, tlsConfig, discoveryServer(groupVersion))
		started := time.Now()
		// The retries back off up to the controller's resync period, 30 s,
		// and have been failing for about as long as the APIService exists:
		// a bound with room for a loaded machine.
		waitForAvailable(t, apiServices, apiService.Name, apiregistrationv1.ConditionTrue, "Passed", 45*time.Second)
		t.Logf("Available=True %s after the server started, the APIService having been unavailable for %s",
			time.Since(started).Round(time.Millisecond), started.Sub(created).Round(time.Millisecond))

		// And the aggregator proxies to it, by the same ServiceLocation.
		var body []byte
		err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
			var code int
			body, err = kubernetes.NewForConfigOrDie(s.ClientConfig).Discovery().RESTClient().Get().AbsPath("/apis", groupVersion).Do(ctx).StatusCode(&code).Raw()
			return err == nil && code == http.StatusOK, nil
		})
		if err != nil {
			t.Fatalf("GET /apis/%s through the control plane never answered by the server: %s", groupVersion, body)
		}
		var list metav1.APIResourceList
		if err := json.Unmarshal(body, &list); err != nil || list.GroupVersion != groupVersion {
			t.Fatalf("GET /apis/%s through the control plane: %s (%v), want the server's APIResourceList", groupVersion, body, err)
		}
	})
}

// While an aggregated API is unreachable, a deleted namespace stays
// Terminating, its condition naming the failing group version, and the
// garbage collector goes on; once the APIService is deleted, the namespace
// goes. The control plane is one of its own, as namespace deletion fails
// for the whole server.
func TestNamespaceDeletionWithUnreachableAggregatedAPI(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	apiServices := aggregatorclient.NewForConfigOrDie(s.ClientConfig).ApiregistrationV1().APIServices()

	const name = "unreachable"
	groupVersion := aggregatedGroup(name) + "/v1alpha1"
	createServiceLocation(t, s.ClientConfig, aggregatedNamespace, name, port443(unusedLoopbackPort(t)))
	apiService := createAPIService(t, apiServices, name, nil)
	waitForAvailable(t, apiServices, apiService.Name, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck", wait.ForeverTestTimeout)

	const live, doomed = "svcref-live", "svcref-doomed"
	newNamespace(t, client, live)
	newNamespace(t, client, doomed)
	if err := client.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace %s: %v", doomed, err)
	}
	requested := time.Now()

	// Meanwhile the collector collects: a dependent of a deleted owner, in
	// a live namespace.
	cms := configMaps(t, s.ClientConfig, live)
	owner := cms.createOwned(t, "owner")
	cms.createOwned(t, "dependent", owner)
	background := metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, owner.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatalf("delete the owner ConfigMap: %v", err)
	}
	cms.waitGone(t, "dependent")

	var last *corev1.Namespace
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if last, err = client.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range last.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				return strings.Contains(c.Message, groupVersion), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("namespace %s never had condition %s=True naming %s (last status %+v): %v", doomed, corev1.NamespaceDeletionDiscoveryFailure, groupVersion, last.Status, err)
	}
	if last.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace %s is %s, want %s", doomed, last.Status.Phase, corev1.NamespaceTerminating)
	}

	conditionSeen := time.Now()

	// The namespace controller retries with a backoff that doubles up to a
	// minute, so the namespace goes about as long after the APIService is
	// deleted as its deletion has been failing: delete it at once, and bound
	// the wait generously; how fast is for benchmarks to tell.
	if err := apiServices.Delete(ctx, apiService.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete APIService %s: %v", apiService.Name, err)
	}
	deleted := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if err != nil {
		got, _ := client.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		t.Fatalf("namespace %s still there 10s after APIService %s was deleted (status %+v): %v", doomed, apiService.Name, got.Status, err)
	}
	// The condition comes after the controller's grace period of 5 s from
	// the deletion request, in upstream's controller.
	t.Logf("namespace %s: condition %s seen %s after its deletion was requested; namespace gone %s after APIService %s was deleted",
		doomed, corev1.NamespaceDeletionDiscoveryFailure, conditionSeen.Sub(requested).Round(time.Millisecond),
		time.Since(deleted).Round(time.Millisecond), apiService.Name)
}
