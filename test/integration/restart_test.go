package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

func TestRestartKeepsObjectsAndCredentials(t *testing.T) {
	ctx := t.Context()
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	client := kubernetes.NewForConfigOrDie(first.ClientConfig)

	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	if _, err := client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	token, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	caBefore := readFile(t, filepath.Join(first.DataDir, "pki", "ca.crt"))
	// A kubeconfig copied elsewhere before the restart, as a user would.
	kubeconfigBefore := readFile(t, first.KubeconfigPath)

	if err := first.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	second := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: first.DataDir})

	if caAfter := readFile(t, filepath.Join(second.DataDir, "pki", "ca.crt")); !bytes.Equal(caBefore, caAfter) {
		t.Fatal("the CA changed across the restart")
	}
	oldConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfigBefore)
	if err != nil {
		t.Fatal(err)
	}
	// The port differs between the two test servers; the credentials must not matter.
	oldConfig.Host = second.ClientConfig.Host
	cm, err := kubernetes.NewForConfigOrDie(oldConfig).CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("old kubeconfig after restart: %v", err)
	}
	if cm.Data["k"] != "v" {
		t.Fatalf("configmap data after restart = %v", cm.Data)
	}

	tokenConfig := rest.AnonymousClientConfig(second.ClientConfig)
	tokenConfig.BearerToken = token.Status.Token
	review, err := kubernetes.NewForConfigOrDie(tokenConfig).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token issued before the restart: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:robot" {
		t.Fatalf("token authenticates as %q", got)
	}
}

func TestSecondInstanceOnSameDataDirFailsFast(t *testing.T) {
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	_, err := cptesting.Start(t.Context(), t.TempDir, cptesting.Options{Customize: kana.Install, DataDir: first.DataDir})
	if err == nil {
		t.Fatal("a second control plane started on a data dir in use")
	}
	if msg := err.Error(); !strings.Contains(msg, "in use") || !strings.Contains(msg, "pid") {
		t.Fatalf("error does not say the data dir is in use and by whom: %v", err)
	}
}

// Several control planes run in one test process at once, each isolated.
func TestConcurrentServersInOneProcess(t *testing.T) {
	const n = 2
	servers := make([]*cptesting.TestServer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// Start, not StartTestServer: t.Fatal must not be called outside
		// the test goroutine. Errors are reported below.
		wg.Go(func() {
			servers[i], errs[i] = cptesting.Start(t.Context(), t.TempDir, cptesting.Options{Customize: kana.Install})
		})
	}
	wg.Wait()
	for i, s := range servers {
		if s == nil {
			continue
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("stopping server %d: %v", i, err)
			}
		})
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("starting server %d: %v", i, err)
		}
	}
	for i, s := range servers {
		client := kubernetes.NewForConfigOrDie(s.ClientConfig)
		name := "only-in-" + string(rune('a'+i))
		if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
	}
	for i, s := range servers {
		list, err := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, "only-in-") && ns.Name != "only-in-"+string(rune('a'+i)) {
				t.Errorf("server %d sees namespace %s of another server", i, ns.Name)
			}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
