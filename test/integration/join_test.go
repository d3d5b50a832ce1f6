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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/etcdcluster"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/jointoken"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
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

	raw, err := firstClient.Discovery().RESTClient().Get().AbsPath(etcdcluster.MembersPath).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var members []etcdcluster.MemberStatus
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
		firstClient.Discovery().RESTClient().Delete().AbsPath(etcdcluster.MembersPath, secondName).Do(ctx).StatusCode(&code)
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
