package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/generic"
	registryrest "k8s.io/apiserver/pkg/registry/rest"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
	"sigs.k8s.io/sample-generic-controlplane/kana"
	"sigs.k8s.io/sample-generic-controlplane/test/internal/controllerslease"
)

// freePort returns a port free on 127.0.0.1 for an etcd member's peers.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// A program on the library joins a server to another's cluster with the
// options the binary's flags set: the second serves what was written
// through the first, with the first's CA; both members vote; one server
// runs the controllers; and a member removed through the API stops its
// server, saying why.
func TestServersOnTheLibraryJoinOneCluster(t *testing.T) {
	ctx := t.Context()
	firstPeerPort, secondPeerPort := freePort(t), freePort(t)
	first, err := cptesting.Start(ctx, t.TempDir, cptesting.Options{Customize: kana.Install, Flags: []string{"--cluster-init", "--etcd-peer-port=" + firstPeerPort}})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop() //nolint:errcheck // checked below
	firstClient := kubernetes.NewForConfigOrDie(first.ClientConfig)
	if _, err := firstClient.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-join"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	token, _, err := jointoken.NewStore(firstClient).Create(ctx, jointoken.CAHash(first.Server.PKI().CA.Cert), jointoken.CreateOptions{TTL: time.Minute, SingleUse: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := cptesting.Start(ctx, t.TempDir, cptesting.Options{Customize: kana.Install, Flags: []string{
		"--join=" + first.Server.URL(), "--token=" + token.String(), "--etcd-peer-port=" + secondPeerPort}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop() //nolint:errcheck // checked below

	if !second.Server.PKI().CA.Cert.Equal(first.Server.PKI().CA.Cert) {
		t.Error("the joined server has a CA of its own, not the cluster's")
	}
	secondClient := kubernetes.NewForConfigOrDie(second.ClientConfig)
	if _, err := secondClient.CoreV1().ConfigMaps("default").Get(ctx, "before-join", metav1.GetOptions{}); err != nil {
		t.Errorf("the joined server does not serve what was written before it joined: %v", err)
	}
	// The first server's admin credentials work on the second.
	firstAdminOnSecond := rest.CopyConfig(first.ClientConfig)
	firstAdminOnSecond.Host = second.Server.URL()
	if _, err := kubernetes.NewForConfigOrDie(firstAdminOnSecond).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("the first server's admin certificate on the second: %v", err)
	}

	raw, err := firstClient.Discovery().RESTClient().Get().AbsPath(cluster.MembersPath).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var members []cluster.MemberStatus
	if err := json.Unmarshal(raw, &members); err != nil {
		t.Fatal(err)
	}
	if len(members) != 2 {
		t.Fatalf("members: %+v, want two", members)
	}
	for _, m := range members {
		if m.Learner {
			t.Errorf("member %s is still a learner once its server is ready", m.Name)
		}
	}

	// One controllers' Lease, held by one of the two.
	t.Logf("controllers run on %s", controllerslease.WaitForHolder(t, firstClient, "", 30*time.Second))

	// Remove the second member: its server stops, saying why; the first
	// serves on alone.
	secondName := ""
	for _, m := range members {
		if m.PeerURLs[0] == "https://127.0.0.1:"+secondPeerPort {
			secondName = m.Name
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var code int
		firstClient.Discovery().RESTClient().Delete().AbsPath(cluster.MembersPath, secondName).Do(ctx).StatusCode(&code)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("removing %s: %v", secondName, err)
	}
	select {
	case <-second.Server.Stopped():
	case <-time.After(30 * time.Second):
		t.Fatal("the removed member's server did not stop")
	}
	if err := second.Stop(); err == nil || !strings.Contains(err.Error(), "removed from its cluster") {
		t.Errorf("the removed member's server stopped with %v, want it to say it was removed", err)
	}
	if _, err := firstClient.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-removal"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("the remaining server does not take writes: %v", err)
	}
	if err := first.Stop(); err != nil {
		t.Errorf("stopping the first server: %v", err)
	}
}

// A start that fails after its join takes its member back out of the
// cluster before it returns, and says so, whether the member was still a
// learner (the configuration refused as etcd starts, as a distribution's
// wrong Resources are) or had voted already (a wiring error in New, after
// the member was promoted: etcd removes a voter only once it has been
// connected for 5 s, and the start asks again until it may). The data dir
// is left as before the join, so that the server joins with a new token
// once the configuration is right.
func TestFailedStartTakesItsMemberBackOut(t *testing.T) {
	ctx := t.Context()
	first, err := cptesting.Start(ctx, t.TempDir, cptesting.Options{Flags: []string{"--cluster-init", "--etcd-peer-port=" + freePort(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop() //nolint:errcheck // a test server
	firstClient := kubernetes.NewForConfigOrDie(first.ClientConfig)
	tokens := jointoken.NewStore(firstClient)
	caHash := jointoken.CAHash(first.Server.PKI().CA.Cert)
	newToken := func() string {
		token, _, err := tokens.Create(ctx, caHash, jointoken.CreateOptions{TTL: time.Minute, SingleUse: true})
		if err != nil {
			t.Fatal(err)
		}
		return token.String()
	}
	members := func() []cluster.MemberStatus {
		t.Helper()
		list, err := cluster.NewMembersClient(first.ClientConfig).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	joinFlags := func(token, peerPort string) []string {
		return []string{"--join=" + first.Server.URL(), "--token=" + token, "--etcd-peer-port=" + peerPort}
	}

	for _, tc := range []struct {
		name      string
		customize func(*controlplane.Options) error
		want      string
	}{
		{
			name: "refused as etcd starts",
			customize: func(o *controlplane.Options) error {
				o.Resources = func() *serverstorage.ResourceConfig {
					r := controlplane.DefaultResources()
					r.DisableResources(corev1.SchemeGroupVersion.WithResource("secrets"))
					return r
				}
				return nil
			},
			want: "the API server itself needs secrets.v1",
		},
		{
			name: "refused once the member votes",
			customize: func(o *controlplane.Options) error {
				return o.AddAPIGroup(controlplane.APIGroup{
					Name:        "unwired.example.com",
					Versions:    []controlplane.APIGroupVersion{{Version: "v1", Priority: 1}},
					Priority:    100,
					Resources:   []string{"things"},
					AddToScheme: func(*runtime.Scheme) error { return nil },
					OpenAPIDefinitions: func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
						return nil
					},
					NewStorage: func(*runtime.Scheme, generic.RESTOptionsGetter) (map[string]map[string]registryrest.Storage, error) {
						return nil, errors.New("the things' storage is not wired")
					},
				})
			},
			want: "the things' storage is not wired",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			_, err := cptesting.Start(ctx, t.TempDir, cptesting.Options{DataDir: dataDir, Flags: joinFlags(newToken(), freePort(t)), Customize: tc.customize})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "was taken back out") {
				t.Fatalf("a start refused after its join: %v; want the refusal (%q), and that the member was taken back out", err, tc.want)
			}
			if list := members(); len(list) != 1 {
				t.Errorf("after the failed start, the members are %+v; want the first server's alone", list)
			}
			for _, name := range []string{"etcd", "etcd-member.json"} {
				if _, err := os.Stat(filepath.Join(dataDir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the failed start left %s in the data dir (%v)", name, err)
				}
			}

			peerPort := freePort(t)
			second, err := cptesting.Start(ctx, t.TempDir, cptesting.Options{DataDir: dataDir, Flags: joinFlags(newToken(), peerPort)})
			if err != nil {
				t.Fatalf("joining again on the same data dir, with a new token: %v", err)
			}
			if list := members(); len(list) != 2 {
				t.Errorf("after the second join, the members are %+v; want two", list)
			}
			// Out again, for the next case: the first server alone.
			name := ""
			for _, m := range members() {
				if slices.Equal(m.PeerURLs, []string{"https://127.0.0.1:" + peerPort}) {
					name = m.Name
				}
			}
			err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := cluster.NewMembersClient(first.ClientConfig).Remove(ctx, name, false)
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("removing the joined member %q: %v", name, err)
			}
			// Its server stops once its member applies its own removal.
			select {
			case <-second.Server.Stopped():
			case <-time.After(30 * time.Second):
				t.Fatal("the removed member's server did not stop")
			}
			second.Stop() //nolint:errcheck // stopped, saying it was removed
		})
	}
}
