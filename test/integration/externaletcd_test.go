package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// etcdTLSFailFast bounds a start whose TLS to etcd cannot work. Without the
// check, upstream's etcd client retries the handshake for 20 s, then fails
// with "etcd grpc connection not ready: context deadline exceeded".
const etcdTLSFailFast = 10 * time.Second

// A control plane on an external etcd that requires client certificates
// serves with --etcd-cafile, --etcd-certfile and --etcd-keyfile right, and
// with one of them wrong fails at once, naming it.
func TestExternalEtcdTLS(t *testing.T) {
	creds, err := externaltlstest.NewCredentials(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := externaltlstest.NewCredentials(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	member := externaltlstest.StartMember(t, creds)
	servers := "--etcd-servers=" + member

	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: append([]string{servers}, creds.ClientFlags()...)})
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "over-tls"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("writing through etcd over TLS: %v", err)
	}

	for _, tc := range []struct {
		name  string
		flags []string
		// want are parts of the error: the flag to fix first.
		want []string
	}{
		{
			name:  "a CA that did not sign the member's certificate",
			flags: []string{"--etcd-cafile=" + foreign.CAFile, "--etcd-certfile=" + creds.ClientCertFile, "--etcd-keyfile=" + creds.ClientKeyFile},
			want:  []string{"--etcd-cafile=" + foreign.CAFile + " does not trust the certificate of the etcd member at " + member, "x509: certificate signed by unknown authority"},
		},
		{
			name:  "no client certificate",
			flags: []string{"--etcd-cafile=" + creds.CAFile},
			want:  []string{"the etcd member at " + member + " requires a client certificate", "set --etcd-certfile and --etcd-keyfile"},
		},
		{
			name:  "a key that is not the certificate's",
			flags: []string{"--etcd-cafile=" + creds.CAFile, "--etcd-certfile=" + creds.ClientCertFile, "--etcd-keyfile=" + foreign.ClientKeyFile},
			want:  []string{"--etcd-keyfile=" + foreign.ClientKeyFile + " is not the key of the client certificate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := cptesting.Start(t.Context(), t.TempDir, cptesting.Options{Customize: kana.Install, Flags: append([]string{servers}, tc.flags...)})
			took := time.Since(start)
			if err == nil {
				s.Stop() //nolint:errcheck
				t.Fatalf("the control plane started with %q; want it to fail", tc.flags)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the start failed with %q, want it to say %q", err, want)
				}
			}
			if took > etcdTLSFailFast {
				t.Errorf("the start failed after %s, want within %s", took.Round(time.Millisecond), etcdTLSFailFast)
			}
		})
	}
}
