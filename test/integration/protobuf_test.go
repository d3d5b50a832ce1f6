package integration

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	controlplanev1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
	networkinginstall "sigs.k8s.io/sample-generic-controlplane/apis/networking/install"
	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	networkingv1alpha1ac "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// protobufMagic starts every object the API server stores as protobuf
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufMagic = []byte("k8s\x00")

// serviceLocationKeys is where the API server stores ServiceLocations.
const serviceLocationKeys = "/registry/servicelocations/"

// Both of our groups are stored as the built-in ones are, in protobuf; a
// NetworkClaim that an earlier release stored as JSON still reads, through
// clients of either encoding, and its next write stores it as protobuf.
func TestNetworkClaimAndServiceLocationStorage(t *testing.T) {
	socket := startEtcd(t)
	etcd := etcdClient(t, socket)
	raw := func(key string) []byte {
		t.Helper()
		resp, err := etcd.Get(t.Context(), key)
		if err != nil {
			t.Fatalf("reading %s from etcd: %v", key, err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("%s is not in etcd", key)
		}
		return resp.Kvs[0].Value
	}

	// What a release before protobuf stored: the v1alpha1 object in JSON,
	// as its storage codec wrote it.
	legacy := newClaim("stored-as-json", "100.92.0.0/16")
	legacy.UID = "6f1c1a52-0000-4000-8000-000000000001"
	legacy.Generation = 1
	legacy.CreationTimestamp = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	scheme := runtime.NewScheme()
	networkinginstall.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	legacyJSON, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, networkingv1alpha1.SchemeGroupVersion), legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(t.Context(), claimKeys+legacy.Name, string(legacyJSON)); err != nil {
		t.Fatal(err)
	}

	// Without the allocator, whose status write would store the legacy
	// claim anew before the test reads it. The data dir keeps the PKI
	// across the restart below.
	dataDir := t.TempDir()
	start := func(flags ...string) *cptesting.TestServer {
		t.Helper()
		return cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: dataDir,
			Flags: append([]string{"--etcd-servers=unix://" + socket, "--controllers=*,-" + allocation.Name}, flags...)})
	}
	s := start()
	clients := map[string]*versioned.Clientset{
		"json":     versioned.NewForConfigOrDie(jsonConfig(s.ClientConfig)),
		"protobuf": versioned.NewForConfigOrDie(s.ClientConfig),
	}

	t.Run("created objects are protobuf in etcd", func(t *testing.T) {
		claim := newClaim("stored-as-protobuf", "100.93.0.0/16")
		if _, err := clients["json"].NetworkingV1alpha1().NetworkClaims().Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		location := &controlplanev1alpha1.ServiceLocation{
			ObjectMeta: metav1.ObjectMeta{Name: "api.stored"},
			Spec:       controlplanev1alpha1.ServiceLocationSpec{Address: "127.0.0.1", Ports: []controlplanev1alpha1.ServiceLocationPort{port443(8443)}},
		}
		if _, err := clients["json"].ControlplaneV1alpha1().ServiceLocations().Create(t.Context(), location, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, stored := range []struct{ key, kind string }{
			{claimKeys + claim.Name, "NetworkClaim"},
			{serviceLocationKeys + location.Name, "ServiceLocation"},
		} {
			value := raw(stored.key)
			if !bytes.HasPrefix(value, protobufMagic) {
				t.Errorf("%s (a %s) is stored as %q..., want protobuf (%q...)", stored.key, stored.kind, head(value), protobufMagic)
			}
			// The envelope names the type, as for built-in objects.
			if !bytes.Contains(value, []byte(stored.kind)) {
				t.Errorf("%s: the stored envelope does not name kind %s: %q", stored.key, stored.kind, head(value))
			}
		}
	})

	t.Run("an object stored as JSON reads and is stored again as protobuf", func(t *testing.T) {
		if value := raw(claimKeys + legacy.Name); !bytes.HasPrefix(value, []byte("{")) {
			t.Fatalf("before any write, %s is %q..., want the JSON the test stored", legacy.Name, head(value))
		}
		for name, c := range clients {
			got, err := c.NetworkingV1alpha1().NetworkClaims().Get(t.Context(), legacy.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s client: get the JSON-stored claim: %v", name, err)
			}
			if got.UID != legacy.UID || !got.CreationTimestamp.Equal(&legacy.CreationTimestamp) || !slices.Equal(got.Spec.AddressSpace, legacy.Spec.AddressSpace) {
				t.Errorf("%s client: the JSON-stored claim reads as %+v, want %+v", name, got, legacy)
			}
			list, err := c.NetworkingV1alpha1().NetworkClaims().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s client: list: %v", name, err)
			}
			if !slices.ContainsFunc(list.Items, func(c networkingv1alpha1.NetworkClaim) bool { return c.UID == legacy.UID }) {
				t.Errorf("%s client: the JSON-stored claim is not listed", name)
			}
		}
		got, err := clients["protobuf"].NetworkingV1alpha1().NetworkClaims().Get(t.Context(), legacy.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Labels = map[string]string{"rewritten": "true"}
		if _, err := clients["protobuf"].NetworkingV1alpha1().NetworkClaims().Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if value := raw(claimKeys + legacy.Name); !bytes.HasPrefix(value, protobufMagic) {
			t.Errorf("after a write, %s is stored as %q..., want protobuf", legacy.Name, head(value))
		}
	})

	// The way back to a release that cannot read protobuf
	// (docs/user-guide.md, "Going back"): --storage-media-type applies to
	// our groups as to built-in ones, so each write stores JSON again.
	t.Run("--storage-media-type=application/json stores JSON again", func(t *testing.T) {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		s := start("--storage-media-type=" + runtime.ContentTypeJSON)
		claims := versioned.NewForConfigOrDie(s.ClientConfig).NetworkingV1alpha1().NetworkClaims()
		got, err := claims.Get(t.Context(), legacy.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get the protobuf-stored claim: %v", err)
		}
		got.Labels["rewritten"] = "as-json"
		if _, err := claims.Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if value := raw(claimKeys + legacy.Name); !bytes.HasPrefix(value, []byte("{")) || !bytes.Contains(value, []byte(`"apiVersion":"networking.x-k8s.io/v1alpha1"`)) {
			t.Errorf("with --storage-media-type=application/json, %s is stored as %q... after a write, want JSON", legacy.Name, head(value))
		}
	})
}

// head is the start of a stored value, for messages.
func head(value []byte) []byte { return value[:min(len(value), 24)] }

// jsonConfig is cfg for a client that sends and accepts JSON alone, as
// kubectl and clients of earlier releases do.
func jsonConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	return cfg
}

// contentTypes records the media types of the responses a client received.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *contentTypes) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
				c.mu.Lock()
				c.seen[req.Method+" "+mediaType] = true
				c.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

func (c *contentTypes) saw(method, mediaType string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[method+" "+mediaType]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A client that speaks JSON and one that speaks protobuf (our clientset's
// default, as client-go's for built-in types) both create, get, list,
// watch, update and apply NetworkClaims, and each is answered in its own
// encoding.
func TestNetworkClaimClientsInJSONAndProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name, mediaType string
		config          func(*rest.Config) *rest.Config
	}{
		{"json", runtime.ContentTypeJSON, jsonConfig},
		{"protobuf", runtime.ContentTypeProtobuf, rest.CopyConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			seen := &contentTypes{seen: map[string]bool{}}
			client := versioned.NewForConfigOrDie(seen.wrap(tc.config(sharedServer(t).ClientConfig)))
			claims := client.NetworkingV1alpha1().NetworkClaims()
			name := "encoding-" + tc.name
			prefix := map[string]string{"json": "100.94.0.0/16", "protobuf": "100.95.0.0/16"}[tc.name]

			w, err := claims.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			createClaims(t, claims, newClaim(name, prefix))
			if got, err := claims.Get(ctx, name, metav1.GetOptions{}); err != nil || got.Spec.AddressSpace[0].Prefix != prefix {
				t.Fatalf("get: %v, %+v", err, got)
			}
			list, err := claims.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(list.Items, func(c networkingv1alpha1.NetworkClaim) bool { return c.Name == name }) {
				t.Errorf("list: %s is not listed", name)
			}
			// The shared server's allocator decides the claim: the watch
			// sees it added and then its status written.
			decided := waitDecided(t, claims, name)
			expectAllocated(t, decided, prefix)
			waitForWatchEvent(t, w, name, func(e watch.Event) bool {
				c, ok := e.Object.(*networkingv1alpha1.NetworkClaim)
				return ok && e.Type == watch.Modified && c.Status.ObservedGeneration == 1
			})

			decided.Spec.AddressSpace[0].Description = "updated in " + tc.name
			if _, err := claims.Update(ctx, decided, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update: %v", err)
			}
			// Server-side apply sends YAML whatever the client's encoding;
			// the answer comes in the client's.
			applied := networkingv1alpha1ac.NetworkClaim(name).WithLabels(map[string]string{"encoding": tc.name})
			if _, err := claims.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "encoding-test", Force: true}); err != nil {
				t.Fatalf("apply: %v", err)
			}
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodPatch} {
				if !seen.saw(method, tc.mediaType) {
					t.Errorf("no %s was answered in %s; answers: %v", method, tc.mediaType, seen.seen)
				}
			}
			for _, other := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
				if other != tc.mediaType && (seen.saw(http.MethodGet, other) || seen.saw(http.MethodPost, other)) {
					t.Errorf("a %s client was answered in %s: %v", tc.name, other, seen.seen)
				}
			}
		})
	}
}

// waitForWatchEvent waits until w delivers an event for name that satisfies cond.
func waitForWatchEvent(t *testing.T, w watch.Interface, name string, cond func(watch.Event) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of %s ended", name)
			}
			if e.Type == watch.Error {
				t.Fatalf("the watch of %s failed: %v", name, e.Object)
			}
			if cond(e) {
				return
			}
		case <-timeout:
			t.Fatalf("no such event for %s within 30s", name)
		}
	}
}
