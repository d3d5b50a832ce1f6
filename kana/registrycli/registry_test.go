package registrycli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/yaml"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

func TestRegistryBadArguments(t *testing.T) {
	// Every case fails before it connects: the kubeconfig does not exist.
	const kubeconfig = "--kubeconfig=/nonexistent/admin.kubeconfig"
	cases := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "list -o wide", args: []string{"registry", "list", kubeconfig, "-o", "wide"}, wantErr: []string{`-o: unknown output format "wide"; write -o json, -o yaml, or leave it out for a table`}},
		{name: "whois --output=wide", args: []string{"registry", "whois", "10.96.0.1", kubeconfig, "--output=wide"}, wantErr: []string{`unknown output format "wide"`}},
		{name: "whois without an address", args: []string{"registry", "whois", kubeconfig}, wantErr: []string{"whois takes one IP address or prefix", "whois 10.96.0.1"}},
		{name: "whois with two addresses", args: []string{"registry", "whois", "10.0.0.1", "10.0.0.2", kubeconfig}, wantErr: []string{"whois takes one IP address or prefix", "got 2"}},
		{name: "whois not an address", args: []string{"registry", "whois", "10.96.0.300", kubeconfig}, wantErr: []string{`"10.96.0.300": write an IP address such as 10.96.0.1 or a prefix such as 10.96.0.0/12`}},
		{name: "list with an argument", args: []string{"registry", "list", "everything", kubeconfig}, wantErr: []string{`"everything"`}},
		{name: "unknown subcommand", args: []string{"registry", "lookup"}, wantErr: []string{`unknown command "lookup"`}},
		{name: "zero timeout", args: []string{"registry", "list", kubeconfig, "--timeout=0s"}, wantErr: []string{"--timeout must be positive"}},
		{name: "kubeconfig missing", args: []string{"registry", "list", kubeconfig}, wantErr: []string{"--kubeconfig /nonexistent/admin.kubeconfig", "no such file"}},
		{name: "ui --address without a port", args: []string{"registry", "ui", kubeconfig, "--address=127.0.0.1"}, wantErr: []string{`--address "127.0.0.1": write host:port, e.g. --address=127.0.0.1:8001`}},
		{name: "ui with an argument", args: []string{"registry", "ui", "10.0.0.0/8", kubeconfig}, wantErr: []string{`"10.0.0.0/8"`}},
		{name: "ui --timeout", args: []string{"registry", "ui", kubeconfig, "--timeout=5s"}, wantErr: []string{"unknown flag: --timeout"}},

		// registry claim: every flag that does not go with the others
		// is named, with what to write.
		{name: "claim without a name", args: []string{"registry", "claim", kubeconfig}, wantErr: []string{"claim takes the NetworkClaim's name first, e.g. claim cluster-a 10.96.0.0/12"}},
		{name: "claim nothing", args: []string{"registry", "claim", "cluster-a", kubeconfig}, wantErr: []string{"nothing to claim: give PREFIX arguments, e.g. claim cluster-a 10.96.0.0/12, or --from CLAIM --prefix-length N"}},
		{name: "claim an invalid name", args: []string{"registry", "claim", "Cluster_A", "10.0.0.0/8", kubeconfig}, wantErr: []string{`NAME "Cluster_A": `, "write a NetworkClaim name such as cluster-a"}},
		{name: "claim not a prefix", args: []string{"registry", "claim", "a", "10.0.0.300/8", kubeconfig}, wantErr: []string{`PREFIX "10.0.0.300/8": write an IPv4 or IPv6 prefix such as 10.96.0.0/12`}},
		{name: "claim an address", args: []string{"registry", "claim", "a", "10.0.0.1", kubeconfig}, wantErr: []string{`PREFIX "10.0.0.1": write an IPv4 or IPv6 prefix`}},
		{name: "claim host bits", args: []string{"registry", "claim", "a", "10.0.0.1/8", kubeconfig}, wantErr: []string{`PREFIX "10.0.0.1/8": must be a canonical prefix (no host bits set, shortest form): write 10.0.0.0/8`}},
		{name: "claim overlapping prefixes", args: []string{"registry", "claim", "a", "10.0.0.0/8", "10.1.0.0/16", kubeconfig}, wantErr: []string{`PREFIX "10.1.0.0/16": overlaps 10.0.0.0/8 (addressSpace[0]); the records of one claim must not overlap`}},
		{name: "claim a prefix twice", args: []string{"registry", "claim", "a", "10.0.0.0/8", "10.0.0.0/8", kubeconfig}, wantErr: []string{`PREFIX: Duplicate value: "10.0.0.0/8"`}},
		{name: "claim an IPv4-mapped prefix", args: []string{"registry", "claim", "a", "::ffff:10.0.0.0/104", kubeconfig},
			wantErr: []string{`PREFIX "::ffff:10.0.0.0/104": must not be an IPv4-mapped IPv6 prefix: write the IPv4 prefix, e.g. 10.0.0.0/8`}},
		{name: "prefixes and --prefix-length", args: []string{"registry", "claim", "a", "10.0.0.0/16", "--from=org", "--prefix-length=16", kubeconfig},
			wantErr: []string{"--prefix-length asks the registry to choose a prefix, PREFIX arguments name them: give one or the other, e.g. claim a --from org --prefix-length 16"}},
		{name: "--prefix-length without --from", args: []string{"registry", "claim", "a", "--prefix-length=16", kubeconfig},
			wantErr: []string{"--prefix-length needs --from CLAIM, the claim whose delegable prefix to take the /16 from, e.g. --from org-pods --prefix-length 16"}},
		{name: "--from without --prefix-length", args: []string{"registry", "claim", "a", "--from=org-pods", kubeconfig},
			wantErr: []string{"--from org-pods needs --prefix-length N, to let the registry choose a free prefix, e.g. --prefix-length 16, or PREFIX arguments inside a delegable prefix of org-pods"}},
		{name: "--from-prefix without --from", args: []string{"registry", "claim", "a", "10.0.0.0/16", "--from-prefix=10.0.0.0/8", kubeconfig},
			wantErr: []string{"--from-prefix needs --from CLAIM, the claim that holds 10.0.0.0/8, e.g. --from org-pods --from-prefix 10.0.0.0/8"}},
		{name: "--from the claim itself", args: []string{"registry", "claim", "a", "--from=a", "--prefix-length=16", kubeconfig}, wantErr: []string{`--from "a": must name another claim`}},
		{name: "--from not a claim name", args: []string{"registry", "claim", "a", "--from=Org", "--prefix-length=16", kubeconfig}, wantErr: []string{`--from "Org": `, "write a NetworkClaim's name, e.g. org-pods"}},
		{name: "--from-prefix not a prefix", args: []string{"registry", "claim", "a", "--from=org", "--from-prefix=10.0.0.0", "--prefix-length=16", kubeconfig},
			wantErr: []string{`--from-prefix "10.0.0.0": write an IPv4 or IPv6 prefix such as 10.0.0.0/8`}},
		{name: "--prefix-length zero", args: []string{"registry", "claim", "a", "--from=org", "--prefix-length=0", kubeconfig},
			wantErr: []string{"--prefix-length 0: must be 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one (a sub-prefix is smaller than its pool), e.g. 16 for a /16"}},
		{name: "--prefix-length longer than the family", args: []string{"registry", "claim", "a", "--from=org", "--from-prefix=10.0.0.0/8", "--prefix-length=48", kubeconfig},
			wantErr: []string{"--prefix-length 48: must fit strictly inside the pool 10.0.0.0/8: write 9 to 32"}},
		{name: "--prefix-length shorter than the pool", args: []string{"registry", "claim", "a", "--from=org", "--from-prefix=fd00::/32", "--prefix-length=16", kubeconfig},
			wantErr: []string{"--prefix-length 16: must fit strictly inside the pool fd00::/32: write 33 to 128"}},
		{name: "PREFIX outside --from-prefix", args: []string{"registry", "claim", "a", "11.0.0.0/16", "--from=org", "--from-prefix=10.0.0.0/8", kubeconfig},
			wantErr: []string{`PREFIX "11.0.0.0/16": must lie strictly inside from.prefix 10.0.0.0/8: write a longer sub-prefix of it`}},
		{name: "--name with two prefixes", args: []string{"registry", "claim", "a", "10.0.0.0/16", "10.1.0.0/16", "--name=pods", kubeconfig},
			wantErr: []string{"--name names one record, and 2 PREFIX arguments make 2: give one PREFIX with --name, or leave --name out"}},
		{name: "--name not a label", args: []string{"registry", "claim", "a", "--from=org", "--prefix-length=16", "--name=pods.v4", kubeconfig}, wantErr: []string{`--name "pods.v4": `, "write a short name such as pods-v4"}},
		// A claim name may be longer than a record name.
		{name: "--from that makes no record name", args: []string{"registry", "claim", "a", "--from=" + strings.Repeat("o", 64), "--prefix-length=16", kubeconfig},
			wantErr: []string{"--from " + strings.Repeat("o", 64) + " makes no record name: give --name, e.g. --name pods-v4"}},
		{name: "--reference not a resource", args: []string{"registry", "claim", "a", "10.0.0.0/8", "--reference=Pods", kubeconfig},
			wantErr: []string{`--reference "Pods": `, "write the plural resource name, e.g. services"}},
		{name: "--reference of a bad group", args: []string{"registry", "claim", "a", "10.0.0.0/8", "--reference=pods.Not_A_Group", kubeconfig},
			wantErr: []string{`--reference "pods.Not_A_Group": `, `write "" for the core group or a group such as networking.k8s.io`}},
		{name: "--description too long", args: []string{"registry", "claim", "a", "10.0.0.0/8", "--description=" + strings.Repeat("x", 256), kubeconfig}, wantErr: []string{"--description: Too long: may not be more than 255 bytes"}},
		{name: "empty --field-manager", args: []string{"registry", "claim", "a", "10.0.0.0/8", "--field-manager=", kubeconfig}, wantErr: []string{"--field-manager must not be empty; leave it out for the default"}},
		{name: "claim -o wide", args: []string{"registry", "claim", "a", "10.0.0.0/8", "-o", "wide", kubeconfig}, wantErr: []string{`-o: unknown output format "wide"`}},
		{name: "claim zero timeout", args: []string{"registry", "claim", "a", "10.0.0.0/8", "--timeout=0s", kubeconfig}, wantErr: []string{"--timeout must be positive"}},

		// The pool policy: only with --delegable, and checked by the
		// API's validation, named by its flag.
		{name: "policy without --delegable", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--min-prefix-length=16", kubeconfig},
			wantErr: []string{"--min-prefix-length sets how a delegable record hands out its space: add --delegable, e.g. claim org 10.0.0.0/8 --delegable --min-prefix-length 16"}},
		{name: "reservation of a pool record without --delegable", args: []string{"registry", "claim", "a", "--from=org", "--prefix-length=16", "--reserve=10.0.0.0/24=gw", kubeconfig},
			wantErr: []string{"--reserve sets how a delegable record hands out its space: add --delegable, e.g. claim a --from org --prefix-length 16 --delegable --reserve 10.0.0.0/24=gw"}},
		{name: "--min-prefix-length as short as the prefix", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--min-prefix-length=8", kubeconfig},
			wantErr: []string{"--min-prefix-length 8: must be the length of a sub-prefix of this record, longer than its own: write 9 to 32"}},
		{name: "--min-prefix-length for two families", args: []string{"registry", "claim", "org", "10.0.0.0/8", "fd00::/32", "--delegable", "--min-prefix-length=16", kubeconfig},
			wantErr: []string{"--min-prefix-length 16 (for PREFIX fd00::/32): must be the length of a sub-prefix of this record, longer than its own: write 33 to 128"}},
		{name: "--max-prefix-length below --min-prefix-length", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--min-prefix-length=24", "--max-prefix-length=16", kubeconfig},
			wantErr: []string{"--max-prefix-length 16: must not be shorter than minPrefixLength 24"}},
		{name: "--max-prefix-length of a pool record", args: []string{"registry", "claim", "a", "--from=org", "--prefix-length=16", "--delegable", "--max-prefix-length=16", kubeconfig},
			wantErr: []string{"--max-prefix-length 16: must be the length of a sub-prefix of this record, longer than its own: write 17 to 128"}},
		{name: "--max-prefix-length zero", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--max-prefix-length=0", kubeconfig},
			wantErr: []string{"--max-prefix-length 0: write the length of the smallest sub-prefix to hand out, e.g. 24, or leave the flag out for no limit"}},
		{name: "--max-records-per-claim zero", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--max-records-per-claim=0", kubeconfig},
			wantErr: []string{"--max-records-per-claim 0: write 1 to 64, or leave the flag out for no limit"}},
		{name: "--max-records-per-claim too many", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--max-records-per-claim=65", kubeconfig},
			wantErr: []string{"--max-records-per-claim 65: must be 1 to 64"}},
		{name: "--reserve not a prefix", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reserve=10.255.0.300/16=gw", kubeconfig},
			wantErr: []string{`--reserve "10.255.0.300/16": write an IPv4 or IPv6 prefix such as 10.255.0.0/16`}},
		{name: "--reserve outside the prefix", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reserve=10.255.0.0/16", "--reserve=11.0.0.0/16=gw", kubeconfig},
			wantErr: []string{`--reserve "11.0.0.0/16=gw": must lie strictly inside the record's prefix 10.0.0.0/8: write a sub-prefix of it, e.g. 10.0.0.0/16`}},
		{name: "--reserve overlapping", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reserve=10.0.0.0/16", "--reserve=10.0.0.0/24", kubeconfig},
			wantErr: []string{`--reserve "10.0.0.0/24": overlaps reservations[0] 10.0.0.0/16: reserve the larger range alone`}},
		{name: "--reserve host bits", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reserve=10.0.0.1/16", kubeconfig},
			wantErr: []string{`--reserve "10.0.0.1/16": must be a canonical prefix (no host bits set, shortest form): write 10.0.0.0/16`}},
		{name: "--reserve description too long", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reserve=10.0.0.0/16=" + strings.Repeat("x", 256), kubeconfig},
			wantErr: []string{"--reserve: Too long: may not be more than 255 bytes"}},
		{name: "--reserve of a pool record", args: []string{"registry", "claim", "a", "--from=org", "--prefix-length=16", "--delegable", "--reserve=10.0.0.0/24", kubeconfig},
			wantErr: []string{`--reserve "10.0.0.0/24": a record whose prefix the registry chooses cannot know its reservations in advance`}},
		{name: "--reuse-grace-period negative", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reuse-grace-period=-1h", kubeconfig},
			wantErr: []string{"--reuse-grace-period -1h0m0s: must not be negative: write e.g. 1h, or 0 to reuse a released sub-prefix at once"}},
		{name: "--reuse-grace-period beyond 30 days", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reuse-grace-period=721h", kubeconfig},
			wantErr: []string{"--reuse-grace-period 721h0m0s: must be at most 720h (30 days): write e.g. 24h"}},
		{name: "--reuse-grace-period not whole seconds", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reuse-grace-period=1.5s", kubeconfig},
			wantErr: []string{"--reuse-grace-period 1.5s: must be whole seconds, as the API counts it: write e.g. 2s"}},
		{name: "--reuse-grace-period not a duration", args: []string{"registry", "claim", "org", "10.0.0.0/8", "--delegable", "--reuse-grace-period=1 hour", kubeconfig},
			wantErr: []string{`invalid argument "1 hour" for "--reuse-grace-period"`}},

		{name: "pools with an argument", args: []string{"registry", "pools", "org-pods", kubeconfig}, wantErr: []string{`unknown command "org-pods"`}},
		{name: "pools -o wide", args: []string{"registry", "pools", kubeconfig, "-o", "wide"}, wantErr: []string{`-o: unknown output format "wide"`}},

		{name: "release without a name", args: []string{"registry", "release", kubeconfig}, wantErr: []string{"release takes one NetworkClaim name, e.g. release cluster-a; got 0 arguments"}},
		{name: "release two", args: []string{"registry", "release", "a", "b", kubeconfig}, wantErr: []string{"got 2 arguments"}},
		{name: "release -o", args: []string{"registry", "release", "a", "-o", "json", kubeconfig}, wantErr: []string{"unknown shorthand flag: 'o'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil {
				t.Fatalf("command %q succeeded; output:\n%s", tc.args, out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// Where the subcommands find the control plane, and what they say when they
// cannot read its NetworkClaims. The servers are fakes that answer every
// request one way.
func TestRegistryConnection(t *testing.T) {
	notServed := startFakeServer(t, http.NotFound)
	forbidden := startFakeServer(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	// Answers nothing until the client gives up.
	noAnswer := startFakeServer(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	// Refuses connections: its listener is closed.
	refused := startFakeServer(t, http.NotFound)
	refused.server.Close()
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	// The server's own message is in between.
	notServedStart, notServedEnd := "reading the NetworkClaims of "+notServed.host+": networkregistry: NetworkClaims not listed: ",
		"; the server does not serve the NetworkClaim API (networking.x-k8s.io/v1alpha1): is its KANA feature gate off?"
	tests := []struct {
		name string
		// env is $KUBECONFIG.
		env  string
		args []string
		// wantErr is the error, or its beginning when wantErrEnd is set.
		wantErr, wantErrEnd string
	}{
		{
			name:    "no --kubeconfig, KUBECONFIG names no file",
			env:     missing,
			args:    []string{"registry", "list"},
			wantErr: "no kubeconfig in KUBECONFIG=" + missing + ": set --kubeconfig=FILE or KUBECONFIG, e.g. --kubeconfig=$HOME/.local/share/sample-generic-controlplane/admin.kubeconfig",
		},
		{
			name:       "no --kubeconfig: KUBECONFIG",
			env:        notServed.kubeconfig,
			args:       []string{"registry", "whois", "10.96.0.1"},
			wantErr:    notServedStart,
			wantErrEnd: notServedEnd,
		},
		{
			name:       "--kubeconfig before KUBECONFIG",
			env:        missing,
			args:       []string{"registry", "list", "--kubeconfig=" + notServed.kubeconfig},
			wantErr:    notServedStart,
			wantErrEnd: notServedEnd,
		},
		{
			name:    "--kubeconfig names no file",
			env:     notServed.kubeconfig,
			args:    []string{"registry", "list", "--kubeconfig=" + missing},
			wantErr: "--kubeconfig " + missing + ": stat " + missing + ": no such file or directory",
		},
		{
			// Not retried: the default --timeout would fail the test.
			name:       "forbidden",
			args:       []string{"registry", "list", "--kubeconfig=" + forbidden.kubeconfig},
			wantErr:    "reading the NetworkClaims of " + forbidden.host + ": networkregistry: NetworkClaims not listed: ",
			wantErrEnd: "; grant the client list and watch on networkclaims, e.g. by the view ClusterRole",
		},
		{
			name:    "no answer within --timeout",
			args:    []string{"registry", "list", "--kubeconfig=" + noAnswer.kubeconfig, "--timeout=300ms"},
			wantErr: "the NetworkClaims of " + noAnswer.host + " were not read within --timeout=300ms; raise --timeout or check the server",
		},
		{
			// At once, not after --timeout: the commands list once.
			name:       "connection refused",
			args:       []string{"registry", "list", "--kubeconfig=" + refused.kubeconfig},
			wantErr:    "reading the NetworkClaims of " + refused.host + ": networkregistry: NetworkClaims not listed: ",
			wantErrEnd: "connection refused",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
			stdout, _, err := runSplit(t, tc.args...)
			ok := err != nil && err.Error() == tc.wantErr
			if tc.wantErrEnd != "" {
				ok = err != nil && strings.HasPrefix(err.Error(), tc.wantErr) && strings.HasSuffix(err.Error(), tc.wantErrEnd)
			}
			if !ok {
				t.Fatalf("%q: %v, stdout %q\nwant error %q … %q", tc.args, err, stdout, tc.wantErr, tc.wantErrEnd)
			}
		})
	}
}

type fakeServer struct {
	server     *httptest.Server
	host       string
	kubeconfig string
}

// startFakeServer starts an HTTP server that answers with handler, and
// writes a kubeconfig for it.
func startFakeServer(t *testing.T, handler http.HandlerFunc) fakeServer {
	t.Helper()
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	config := clientcmdapi.NewConfig()
	config.Clusters["fake"] = &clientcmdapi.Cluster{Server: server.URL}
	config.AuthInfos["fake"] = &clientcmdapi.AuthInfo{}
	config.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "fake"}
	config.CurrentContext = "fake"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return fakeServer{server: server, host: server.URL, kubeconfig: path}
}

// What registry claim says when the server refuses the claim: which verb
// to ask the registry's admin for. The fake servers answer as the API
// server does: NetworkClaimPoolUse names the refused from.claim in a cause,
// RBAC names none.
func TestRegistryClaimForbidden(t *testing.T) {
	refuse := func(causes ...metav1.StatusCause) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			status := metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `networkclaims.networking.x-k8s.io "cluster-a" is forbidden: refused`,
				Details: &metav1.StatusDetails{Name: "cluster-a", Group: "networking.x-k8s.io", Kind: "networkclaims", Causes: causes},
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			if err := json.NewEncoder(w).Encode(status); err != nil {
				t.Error(err)
			}
		}
	}
	noUse := startFakeServer(t, refuse(metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: "spec.addressSpace[0].from.claim"}))
	noWrite := startFakeServer(t, refuse())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{
			name: "no use of the pool",
			args: []string{"registry", "claim", "cluster-a", "--from=org-pods", "--prefix-length=16", "--kubeconfig=" + noUse.kubeconfig},
			wantErr: `claiming NetworkClaim cluster-a: networkclaims.networking.x-k8s.io "cluster-a" is forbidden: refused; ` +
				`ask the registry's admin for the verb use on NetworkClaim org-pods (a ClusterRole with the rule {apiGroups: [networking.x-k8s.io], resources: [networkclaims], resourceNames: [org-pods], verbs: [use]}, bound to you), or take from a claim you may use`,
		},
		{
			name: "no right to write claims",
			args: []string{"registry", "claim", "cluster-a", "10.96.0.0/12", "--kubeconfig=" + noWrite.kubeconfig},
			wantErr: `claiming NetworkClaim cluster-a: networkclaims.networking.x-k8s.io "cluster-a" is forbidden: refused; ` +
				`ask the registry's admin for create and patch on networkclaims (the edit ClusterRole has them)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
			stdout, _, err := runSplit(t, tc.args...)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("%q: %v, stdout %q\nwant error %q", tc.args, err, stdout, tc.wantErr)
			}
		})
	}
}

func TestRegistryHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{args: []string{"registry", "--help"}, want: []string{"list ", "whois ", "NetworkClaim", "registry <command> [--kubeconfig=FILE]", "$KUBECONFIG, else in ~/.kube/config"}},
		{args: []string{"registry", "list", "--help"}, want: []string{"registry list [--kubeconfig=FILE]", "SINCE is how long ago the registry decided", "to $KUBECONFIG, then ~/.kube/config", "--timeout"}},
		{args: []string{"registry", "whois", "--help"}, want: []string{"registry whois <ip|prefix> [--kubeconfig=FILE]", "to $KUBECONFIG, then ~/.kube/config"}},
		{args: []string{"registry", "--help"}, want: []string{"claim ", "release "}},
		{args: []string{"registry", "claim", "--help"}, want: []string{
			"registry claim NAME PREFIX... | claim NAME --from CLAIM --prefix-length N [--name RECORD]",
			"--from-prefix", "--delegable", "--field-manager", "exits 1, after printing, when some", "-o json or -o yaml prints the NetworkClaim",
		}},
		{args: []string{"registry", "release", "--help"}, want: []string{"registry release NAME [--kubeconfig=FILE]", "stay theirs"}},
		{args: []string{"registry", "--help"}, want: []string{"pools "}},
		{args: []string{"registry", "pools", "--help"}, want: []string{
			"registry pools [--kubeconfig=FILE]", "LARGEST FREE", "+N more", "/16-/24, 2 per claim, 1 reserved, grace 1h", "7.92e28", "--timeout", "-o, --output",
		}},
		{args: []string{"registry", "claim", "--help"}, want: []string{
			"--min-prefix-length", "--max-prefix-length", "--max-records-per-claim", "--reserve", "--reuse-grace-period", "PoolPolicy", "ReuseGracePeriod",
		}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("%q does not mention %q:\n%s", tc.args, want, out)
				}
			}
		})
	}
}

var (
	registryNow       = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	registryDecidedAt = metav1.NewTime(registryNow.Add(-49 * time.Hour))
	servicesRef       = &v1alpha1.ResourceReference{Resource: "services"}
)

// registryClaims is a registry with every kind of record: allocated and
// unavailable, with and without a reference, and one not decided yet.
func registryClaims() []*v1alpha1.NetworkClaim {
	return []*v1alpha1.NetworkClaim{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "cni"},
			Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
				{Prefix: "fd00:10:244::/56", Reference: &v1alpha1.ResourceReference{Resource: "pods"}},
				{Prefix: "10.96.0.0/16", Reference: &v1alpha1.ResourceReference{Resource: "pods"}, Description: "pod range"},
				{Prefix: "192.168.0.0/24", Reference: &v1alpha1.ResourceReference{Group: "networking.k8s.io", Resource: "servicecidrs"}},
			}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
				{Prefix: "fd00:10:244::/56", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
				{Prefix: "10.96.0.0/16", Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"},
				// 192.168.0.0/24 is not decided yet.
			}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver"},
			Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
				{Prefix: "10.96.0.0/12", Reference: servicesRef, Description: "Service ClusterIPs"},
				{Prefix: "172.16.0.0/12"},
			}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
				{Prefix: "10.96.0.0/12", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
				{Prefix: "172.16.0.0/12", Status: v1alpha1.AllocationAllocated, Date: metav1.NewTime(registryNow.Add(-90 * time.Second))},
				// Released: no longer in spec, not listed.
				{Prefix: "10.0.0.0/24", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
			}},
		},
	}
}

func TestPrintList(t *testing.T) {
	var out bytes.Buffer
	if err := printList(&out, recordsOfClaims(registryClaims()), registryNow); err != nil {
		t.Fatal(err)
	}
	// Per claim, IPv4 first, then CIDR order.
	want := strings.Join([]string{
		"CLAIM            PREFIX             STATUS        REFERENCE                        SINCE     DETAILS",
		"cni              10.96.0.0/16       Unavailable   pods                             2d1h      overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver",
		"cni              192.168.0.0/24     Pending       servicecidrs.networking.k8s.io   -         ",
		"cni              fd00:10:244::/56   Allocated     pods                             2d1h      ",
		"kube-apiserver   10.96.0.0/12       Allocated     services                         2d1h      Service ClusterIPs",
		"kube-apiserver   172.16.0.0/12      Allocated     <none>                           90s       ",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("list table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// noChain is the chain of an allocation in a registry that holds nothing
// it was delegated from.
func noChain(a networkregistry.Allocation) []networkregistry.Allocation {
	return []networkregistry.Allocation{a}
}

func TestPrintWhois(t *testing.T) {
	allocations := []networkregistry.Allocation{
		{Claim: "kube-apiserver", Prefix: netip.MustParsePrefix("10.96.0.0/12"), Reference: servicesRef, Description: "Service ClusterIPs", Date: registryDecidedAt.Time},
		{Claim: "lb", Prefix: netip.MustParsePrefix("10.96.8.0/24"), Date: registryDecidedAt.In(time.FixedZone("CET", 3600))},
	}
	var out bytes.Buffer
	if err := printWhois(&out, recordsOfAllocations(allocations, noChain)); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"PREFIX         CLAIM            REFERENCE   ALLOCATED              CHAIN            DESCRIPTION",
		"10.96.0.0/12   kube-apiserver   services    2026-03-02T11:00:00Z   kube-apiserver   Service ClusterIPs",
		"10.96.8.0/24   lb               <none>      2026-03-02T11:00:00Z   lb               ",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("whois table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// delegationClaims is a registry where org-pods delegates 10.0.0.0/8,
// cluster-b takes a /16 of it and delegates it in turn to node-1, and
// node-2 keeps a /24 of a claim that is gone.
func delegationClaims() []*v1alpha1.NetworkClaim {
	length := func(n int32) *int32 { return &n }
	pods := &v1alpha1.ResourceReference{Resource: "pods"}
	allocated := func(name, prefix string, from *v1alpha1.ClaimedPrefix) v1alpha1.AddressSpaceStatus {
		return v1alpha1.AddressSpaceStatus{Name: name, Prefix: prefix, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, DelegatedFrom: from}
	}
	claim := func(name string, records []v1alpha1.AddressSpaceRecord, statuses ...v1alpha1.AddressSpaceStatus) *v1alpha1.NetworkClaim {
		return &v1alpha1.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: records},
			Status:     v1alpha1.NetworkClaimStatus{AddressSpace: statuses},
		}
	}
	return []*v1alpha1.NetworkClaim{
		claim("org-pods", []v1alpha1.AddressSpaceRecord{{Prefix: "10.0.0.0/8", Delegable: true, Reference: pods, Description: "pods of the org"}},
			allocated("", "10.0.0.0/8", nil)),
		claim("cluster-b", []v1alpha1.AddressSpaceRecord{
			{Name: "pods-v4", From: &v1alpha1.PrefixSource{Claim: "org-pods"}, PrefixLength: length(16), Delegable: true, Reference: pods, Description: "pods of cluster b"},
			{Name: "pods-v6", From: &v1alpha1.PrefixSource{Claim: "org-pods", Prefix: "fd00::/32"}, PrefixLength: length(48), Reference: pods},
		},
			allocated("pods-v4", "10.1.0.0/16", &v1alpha1.ClaimedPrefix{Claim: "org-pods", Prefix: "10.0.0.0/8"}),
			v1alpha1.AddressSpaceStatus{Name: "pods-v6", Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: v1alpha1.ReasonPoolNotFound,
				Message: "NetworkClaim org-pods holds no allocated delegable prefix that can hold a /48"}),
		claim("node-1", []v1alpha1.AddressSpaceRecord{{Name: "pods", From: &v1alpha1.PrefixSource{Claim: "cluster-b"}, PrefixLength: length(24)}},
			allocated("pods", "10.1.0.0/24", &v1alpha1.ClaimedPrefix{Claim: "cluster-b", Prefix: "10.1.0.0/16"})),
		claim("node-2", []v1alpha1.AddressSpaceRecord{{Prefix: "10.2.0.0/24", From: &v1alpha1.PrefixSource{Claim: "cluster-z"}}},
			allocated("", "10.2.0.0/24", &v1alpha1.ClaimedPrefix{Claim: "cluster-z", Prefix: "10.2.0.0/16"})),
	}
}

// snapshot is a registry of the claims, as the subcommands read one.
func snapshot(t *testing.T, claims []*v1alpha1.NetworkClaim) *networkregistry.Registry {
	t.Helper()
	client := fake.NewSimpleClientset()
	for _, c := range claims {
		if err := client.Tracker().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	r, err := networkregistry.Snapshot(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// whois shows the delegation chain of every allocation it finds.
func TestPrintWhoisChain(t *testing.T) {
	r := snapshot(t, delegationClaims())
	tests := []struct {
		query string
		want  []string
	}{
		{query: "10.1.0.1", want: []string{
			"PREFIX        CLAIM       REFERENCE   ALLOCATED              CHAIN                           DESCRIPTION",
			"10.0.0.0/8    org-pods    pods        2026-03-02T11:00:00Z   org-pods                        pods of the org",
			"10.1.0.0/16   cluster-b   pods        2026-03-02T11:00:00Z   cluster-b ← org-pods            pods of cluster b",
			"10.1.0.0/24   node-1      <none>      2026-03-02T11:00:00Z   node-1 ← cluster-b ← org-pods   ",
		}},
		{query: "10.2.0.1", want: []string{
			"PREFIX        CLAIM      REFERENCE   ALLOCATED              CHAIN                           DESCRIPTION",
			"10.0.0.0/8    org-pods   pods        2026-03-02T11:00:00Z   org-pods                        pods of the org",
			"10.2.0.0/24   node-2     <none>      2026-03-02T11:00:00Z   node-2 ← cluster-z (released)   ",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			allocations, err := r.WhoHas(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := printWhois(&out, recordsOfAllocations(allocations, r.Chain)); err != nil {
				t.Fatal(err)
			}
			if want := strings.Join(tc.want, "\n") + "\n"; out.String() != want {
				t.Errorf("whois %s:\n%s\nwant:\n%s", tc.query, out.String(), want)
			}
		})
	}
}

// list shows the prefix the registry chose for a record taken from a pool,
// and "-" while it has none.
func TestPrintListPools(t *testing.T) {
	var out bytes.Buffer
	if err := printList(&out, recordsOfClaims(snapshot(t, delegationClaims()).Claims()), registryNow); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"CLAIM       PREFIX        STATUS        REFERENCE   SINCE     DETAILS",
		"cluster-b   -             Unavailable   pods        2d1h      NetworkClaim org-pods holds no allocated delegable prefix that can hold a /48",
		"cluster-b   10.1.0.0/16   Allocated     pods        2d1h      pods of cluster b",
		"node-1      10.1.0.0/24   Allocated     <none>      2d1h      ",
		"node-2      10.2.0.0/24   Allocated     <none>      2d1h      ",
		"org-pods    10.0.0.0/8    Allocated     pods        2d1h      pods of the org",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("list table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// policyClaims are a pool with a policy, and a claim whose records it
// refuses or rests.
func policyClaims() []*v1alpha1.NetworkClaim {
	n := func(v int32) *int32 { return &v }
	hour := int64(3600)
	unavailable := func(name, prefix, reason, message string) v1alpha1.AddressSpaceStatus {
		return v1alpha1.AddressSpaceStatus{Name: name, Prefix: prefix, Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: reason, Message: message}
	}
	return []*v1alpha1.NetworkClaim{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "org-pods"},
			Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
				{Prefix: "10.0.0.0/8", Delegable: true, Description: "pods of the org", Pool: &v1alpha1.PoolPolicy{
					MinPrefixLength: n(16), MaxPrefixLength: n(24), MaxRecordsPerClaim: n(2),
					Reservations: []v1alpha1.PoolReservation{{Prefix: "10.255.0.0/16"}}, ReuseGracePeriodSeconds: &hour,
				}},
				// An empty policy is none.
				{Prefix: "fd00::/32", Delegable: true, Pool: &v1alpha1.PoolPolicy{}},
			}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
				{Prefix: "10.0.0.0/8", Delegable: true, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
				{Prefix: "fd00::/32", Delegable: true, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
			}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha"},
			Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
				{Name: "big", From: &v1alpha1.PrefixSource{Claim: "org-pods"}, PrefixLength: n(12)},
				{Name: "third", From: &v1alpha1.PrefixSource{Claim: "org-pods"}, PrefixLength: n(16)},
				{Prefix: "10.1.0.0/16", From: &v1alpha1.PrefixSource{Claim: "org-pods"}},
			}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
				unavailable("big", "", v1alpha1.ReasonPoolPolicy, "a /12 is larger than the /16 to /24 that 10.0.0.0/8 of NetworkClaim org-pods hands out"),
				unavailable("third", "", v1alpha1.ReasonPoolPolicy, "NetworkClaim alpha already holds 2 records from 10.0.0.0/8 of NetworkClaim org-pods, its maxRecordsPerClaim"),
				unavailable("", "10.1.0.0/16", v1alpha1.ReasonReuseGracePeriod,
					"10.1.0.0/16 was released by NetworkClaim beta-pods-v4 and rests until 2026-11-23T05:18:40Z, the reuse grace period of 10.0.0.0/8 of NetworkClaim org-pods"),
			}},
		},
	}
}

// What registry claim says, when it exits 1, that the unavailable records
// wait for.
func TestWaitingFor(t *testing.T) {
	const (
		space  = "the registry allocates them when the space they wait for is free"
		grace  = "a record waiting for a released prefix to rest (ReuseGracePeriod) gets it when the pool's reuse grace period ends"
		policy = "a record refused by its pool's policy (PoolPolicy) waits until it fits the policy, which registry pools shows"
	)
	refused := policyClaims()[1]
	tests := []struct {
		name  string
		claim *v1alpha1.NetworkClaim
		want  string
	}{
		{name: "conflict", claim: registryClaims()[0], want: space},
		{name: "pool not found", claim: delegationClaims()[1], want: space},
		{name: "policy and grace", claim: refused, want: grace + "; " + policy},
		{name: "policy only", claim: func() *v1alpha1.NetworkClaim {
			c := refused.DeepCopy()
			c.Spec.AddressSpace, c.Status.AddressSpace = c.Spec.AddressSpace[:1], c.Status.AddressSpace[:1]
			return c
		}(), want: policy},
		{name: "grace and a conflict", claim: func() *v1alpha1.NetworkClaim {
			c := refused.DeepCopy()
			c.Spec.AddressSpace, c.Status.AddressSpace = c.Spec.AddressSpace[2:], c.Status.AddressSpace[2:]
			c.Spec.AddressSpace = append(c.Spec.AddressSpace, v1alpha1.AddressSpaceRecord{Prefix: "10.96.0.0/16"})
			c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{Prefix: "10.96.0.0/16", Status: v1alpha1.AllocationUnavailable, Reason: v1alpha1.ReasonConflict})
			return c
		}(), want: space + "; " + grace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitingFor(networkregistry.Decisions(tc.claim)); got != tc.want {
				t.Errorf("waitingFor = %q, want %q", got, tc.want)
			}
		})
	}
}

// claim prints one row per record of the claim, with the registry's
// decision, or the claim itself as JSON or YAML.
func TestPrintClaim(t *testing.T) {
	claims := delegationClaims()
	conflict := &v1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
			{Prefix: "10.96.0.0/16", Description: "pod range"},
			{Name: "v6", Prefix: "fd00:10:244::/56", Description: "pod range"},
		}},
		Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
			{Prefix: "10.96.0.0/16", Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: v1alpha1.ReasonConflict,
				Message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver", ConflictsWith: &v1alpha1.ClaimedPrefix{Claim: "kube-apiserver", Prefix: "10.96.0.0/12"}},
			{Name: "v6", Prefix: "fd00:10:244::/56", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
		}},
	}
	tests := []struct {
		name  string
		claim *v1alpha1.NetworkClaim
		want  []string
	}{
		{name: "pools", claim: claims[1], want: []string{
			"RECORD    PREFIX        STATUS        REASON         DETAILS",
			"pods-v4   10.1.0.0/16   Allocated     -              from org-pods 10.0.0.0/8; pods of cluster b",
			"pods-v6   -             Unavailable   PoolNotFound   NetworkClaim org-pods holds no allocated delegable prefix that can hold a /48",
		}},
		// A delegable record shows its policy; records the policy
		// refuses, or that wait for a prefix to rest, say why.
		{name: "pool policy", claim: policyClaims()[0], want: []string{
			"RECORD    PREFIX       STATUS      REASON    DETAILS",
			"-         10.0.0.0/8   Allocated   -         pods of the org; policy /16-/24, 2 per claim, 1 reserved, grace 1h",
			"-         fd00::/32    Allocated   -         ",
		}},
		{name: "refused by the policy", claim: policyClaims()[1], want: []string{
			"RECORD    PREFIX        STATUS        REASON             DETAILS",
			"big       -             Unavailable   PoolPolicy         a /12 is larger than the /16 to /24 that 10.0.0.0/8 of NetworkClaim org-pods hands out",
			"third     -             Unavailable   PoolPolicy         NetworkClaim alpha already holds 2 records from 10.0.0.0/8 of NetworkClaim org-pods, its maxRecordsPerClaim",
			"-         10.1.0.0/16   Unavailable   ReuseGracePeriod   10.1.0.0/16 was released by NetworkClaim beta-pods-v4 and rests until 2026-11-23T05:18:40Z, the reuse grace period of 10.0.0.0/8 of NetworkClaim org-pods",
		}},
		{name: "exact prefixes", claim: conflict, want: []string{
			"RECORD    PREFIX             STATUS        REASON     DETAILS",
			"-         10.96.0.0/16       Unavailable   Conflict   overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver",
			"v6        fd00:10:244::/56   Allocated     -          pod range",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printClaim(&out, "", tc.claim); err != nil {
				t.Fatal(err)
			}
			if want := strings.Join(tc.want, "\n") + "\n"; out.String() != want {
				t.Errorf("claim table:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}

	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := printClaim(&out, format, claims[1]); err != nil {
				t.Fatal(err)
			}
			var got v1alpha1.NetworkClaim
			if err := yaml.UnmarshalStrict(out.Bytes(), &got); err != nil {
				t.Fatalf("-o %s: %v\n%s", format, err, out.String())
			}
			if got.Kind != "NetworkClaim" || got.APIVersion != "networking.x-k8s.io/v1alpha1" || got.Status.AddressSpace[0].Prefix != "10.1.0.0/16" {
				t.Errorf("-o %s is not the claim as a manifest:\n%s", format, out.String())
			}
			if format == "yaml" && !strings.HasPrefix(out.String(), "apiVersion: networking.x-k8s.io/v1alpha1\n") {
				t.Errorf("-o yaml:\n%s", out.String())
			}
		})
	}
}

func TestPrintJSON(t *testing.T) {
	tests := []struct {
		name    string
		records []registryRecord
		want    string
	}{
		{name: "nothing", records: nil, want: "[]"},
		{
			name:    "list",
			records: recordsOfClaims(registryClaims()[:1]),
			want: `[
			  {"claim": "cni", "prefix": "10.96.0.0/16", "status": "Unavailable", "reference": {"group": "", "resource": "pods"},
			   "description": "pod range", "date": "2026-03-02T11:00:00Z", "message": "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"},
			  {"claim": "cni", "prefix": "192.168.0.0/24", "status": "Pending", "reference": {"group": "networking.k8s.io", "resource": "servicecidrs"}},
			  {"claim": "cni", "prefix": "fd00:10:244::/56", "status": "Allocated", "reference": {"group": "", "resource": "pods"}, "date": "2026-03-02T11:00:00Z"}
			]`,
		},
		{
			name: "whois",
			records: recordsOfAllocations([]networkregistry.Allocation{
				{Claim: "kube-apiserver", Prefix: netip.MustParsePrefix("10.96.0.0/12"), Reference: servicesRef, Description: "Service ClusterIPs", Date: registryDecidedAt.Time},
			}, noChain),
			want: `[{"claim": "kube-apiserver", "prefix": "10.96.0.0/12", "status": "Allocated", "reference": {"group": "", "resource": "services"},
			        "description": "Service ClusterIPs", "date": "2026-03-02T11:00:00Z", "chain": [{"claim": "kube-apiserver", "prefix": "10.96.0.0/12"}]}]`,
		},
		{
			name:    "list of records taken from pools",
			records: recordsOfClaims(delegationClaims()[1:2]),
			want: `[
			  {"claim": "cluster-b", "name": "pods-v6", "status": "Unavailable", "reference": {"group": "", "resource": "pods"},
			   "from": {"claim": "org-pods", "prefix": "fd00::/32"}, "prefixLength": 48, "date": "2026-03-02T11:00:00Z",
			   "reason": "PoolNotFound", "message": "NetworkClaim org-pods holds no allocated delegable prefix that can hold a /48"},
			  {"claim": "cluster-b", "name": "pods-v4", "prefix": "10.1.0.0/16", "status": "Allocated", "reference": {"group": "", "resource": "pods"},
			   "description": "pods of cluster b", "delegable": true, "from": {"claim": "org-pods"}, "prefixLength": 16, "date": "2026-03-02T11:00:00Z",
			   "delegatedFrom": {"claim": "org-pods", "prefix": "10.0.0.0/8"}}
			]`,
		},
		{
			name: "whois with a chain",
			records: func() []registryRecord {
				r := snapshot(t, delegationClaims())
				allocations, _ := r.WhoHas("10.1.0.0/24")
				return recordsOfAllocations(allocations[2:], r.Chain)
			}(),
			want: `[{"claim": "node-1", "name": "pods", "prefix": "10.1.0.0/24", "status": "Allocated", "date": "2026-03-02T11:00:00Z",
			        "delegatedFrom": {"claim": "cluster-b", "prefix": "10.1.0.0/16"},
			        "chain": [{"claim": "node-1", "prefix": "10.1.0.0/24"}, {"claim": "cluster-b", "prefix": "10.1.0.0/16"}, {"claim": "org-pods", "prefix": "10.0.0.0/8"}]}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printJSON(&out, tc.records); err != nil {
				t.Fatal(err)
			}
			checkJSON(t, out.Bytes(), tc.want)
		})
	}
}

// checkJSON compares JSON output with want, both compacted.
func checkJSON(t *testing.T, out []byte, want string) {
	t.Helper()
	var compact, wantCompact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if err := json.Compact(&wantCompact, []byte(want)); err != nil {
		t.Fatal(err)
	}
	if compact.String() != wantCompact.String() {
		t.Errorf("JSON:\n%s\nwant:\n%s", compact.String(), wantCompact.String())
	}
}

// binary is the command as the binary has it: under a root command that
// prints errors itself, without usage.
func binary() *cobra.Command {
	root := &cobra.Command{Use: "sample-generic-controlplane", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(NewCommand())
	return root
}

// execute runs the command with args and returns its error and output,
// stdout and stderr together.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, err := runSplit(t, args...)
	return stdout + stderr, err
}

// runSplit runs the command with args and returns its stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := binary()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// The subcommands against a control plane whose registry decided on two
// claims, one of them in conflict.
func TestRegistryAgainstControlPlane(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	r, err := networkregistry.NewForConfig(s.ClientConfig, "registry-command-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	claim := func(name, prefix string, ref *v1alpha1.ResourceReference) error {
		t.Helper()
		if _, err := r.Claim(ctx, name, []networkregistry.Record{{Prefix: netip.MustParsePrefix(prefix), Reference: ref, Description: name + " range"}}); err != nil {
			t.Fatal(err)
		}
		_, err := r.WaitForAllocation(ctx, name)
		return err
	}
	if err := claim("proxy", "198.18.0.0/16", servicesRef); err != nil {
		t.Fatal(err)
	}
	var unavailable *networkregistry.UnavailableError
	if err := claim("cni", "198.18.1.0/24", &v1alpha1.ResourceReference{Resource: "pods"}); !errors.As(err, &unavailable) {
		t.Fatalf("an overlapping claim: %v, want an *UnavailableError", err)
	}
	kubeconfig := "--kubeconfig=" + s.KubeconfigPath

	stdout, stderr, err := runSplit(t, "registry", "list", kubeconfig)
	if err != nil {
		t.Fatalf("registry list: %v\n%s", err, stderr)
	}
	rows := tableRows(stdout)
	want := [][]string{
		{"CLAIM", "PREFIX", "STATUS", "REFERENCE", "SINCE", "DETAILS"},
		{"cni", "198.18.1.0/24", "Unavailable", "pods", "*", "overlaps 198.18.0.0/16 held by NetworkClaim proxy"},
		{"proxy", "198.18.0.0/16", "Allocated", "services", "*", "proxy range"},
	}
	if !rowsMatch(rows, want) {
		t.Errorf("registry list:\n%s", stdout)
	}

	// Without --kubeconfig, $KUBECONFIG names the control plane, as for kubectl.
	t.Setenv("KUBECONFIG", s.KubeconfigPath)
	stdout, stderr, err = runSplit(t, "registry", "list")
	if err != nil || !rowsMatch(tableRows(stdout), want) {
		t.Errorf("registry list with KUBECONFIG and no --kubeconfig: %v\n%s%s", err, stdout, stderr)
	}

	stdout, stderr, err = runSplit(t, "registry", "whois", "198.18.1.7", kubeconfig)
	if err != nil {
		t.Fatalf("registry whois: %v\n%s", err, stderr)
	}
	want = [][]string{
		{"PREFIX", "CLAIM", "REFERENCE", "ALLOCATED", "CHAIN", "DESCRIPTION"},
		{"198.18.0.0/16", "proxy", "services", "*", "proxy", "proxy range"},
	}
	if !rowsMatch(tableRows(stdout), want) {
		t.Errorf("registry whois 198.18.1.7:\n%s", stdout)
	}

	stdout, stderr, err = runSplit(t, "registry", "whois", "10.1.2.3", kubeconfig)
	if err != nil || stdout != "" || stderr != "No NetworkClaim holds 10.1.2.3\n" {
		t.Errorf("registry whois of an address nobody holds: %v, stdout %q, stderr %q", err, stdout, stderr)
	}

	stdout, _, err = runSplit(t, "registry", "whois", "198.0.0.0/8", kubeconfig, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var records []map[string]any
	if err := json.Unmarshal([]byte(stdout), &records); err != nil {
		t.Fatalf("registry whois -o json is not JSON: %v\n%s", err, stdout)
	}
	if len(records) != 1 || records[0]["claim"] != "proxy" || records[0]["prefix"] != "198.18.0.0/16" || records[0]["status"] != "Allocated" {
		t.Errorf("registry whois -o json: %s", stdout)
	}

	testRegistryClaimAndRelease(t, kubeconfig)
	testRegistryClaimFromPool(t, kubeconfig)
	testRegistryPools(t, kubeconfig)
	testRegistryUI(t, kubeconfig)
}

// registry ui serves on the address it prints, shows the registry of the
// kubeconfig's control plane, and stops when its context ends.
func testRegistryUI(t *testing.T, kubeconfig string) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := binary()
	// A file, which the command writes while the test reads it.
	outPath := filepath.Join(t.TempDir(), "out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() //nolint:errcheck // written by the command only
	printed := func() string {
		data, _ := os.ReadFile(outPath)
		return string(data)
	}
	cmd.SetArgs([]string{"registry", "ui", kubeconfig, "--address=127.0.0.1:0"})
	cmd.SetOut(out)
	cmd.SetErr(out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	var base string
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		_, url, ok := strings.Cut(printed(), " on http://")
		base, _, _ = strings.Cut(url, "\n")
		return ok && strings.Contains(url, "\n"), nil
	})
	if err != nil {
		t.Fatalf("registry ui printed no URL: %q", printed())
	}
	if want := "Serving a live map of the NetworkClaim registry of https://127.0.0.1:"; !strings.HasPrefix(printed(), want) || strings.Contains(printed(), "WARNING") {
		t.Errorf("registry ui printed %q, want %q… and no warning on loopback", printed(), want)
	}
	var claim uiClaim
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + base + "api/claim?name=proxy")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close() //nolint:errcheck
		return resp.StatusCode == http.StatusOK, json.NewDecoder(resp.Body).Decode(&claim)
	})
	if err != nil || len(claim.Records) != 1 || claim.Records[0].Prefix != "198.18.0.0/16" || claim.Records[0].Status != "Allocated" {
		t.Errorf("registry ui's claim proxy: %v, %+v", err, claim)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("registry ui ended with %v when its context ended, want nil", err)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("registry ui did not stop when its context ended")
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"": false, "0.0.0.0": false, "::": false, "192.168.1.10": false, "my-laptop": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// registry claim --delegable applies a pool policy, and registry pools
// lists every pool with it and its tenants. The control plane holds lb's
// and org's delegable prefixes from the tests before. The figures are the
// allocator's to write: any value matches, "-" too.
func testRegistryPools(t *testing.T, kubeconfig string) {
	stdout, stderr, err := runSplit(t, "registry", "claim", "tenant-pool", "100.64.0.0/10", "--delegable", "--min-prefix-length=16", "--max-prefix-length=24",
		"--max-records-per-claim=2", "--reserve=100.127.0.0/16=infrastructure", "--reserve=100.126.0.0/16", "--reuse-grace-period=1h", kubeconfig)
	want := [][]string{
		{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"},
		{"-", "100.64.0.0/10", "Allocated", "-", "policy /16-/24, 2 per claim, 2 reserved, grace 1h"},
	}
	if err != nil || !rowsMatch(tableRows(stdout), want) {
		t.Fatalf("registry claim tenant-pool with a policy: %v\n%s%s", err, stdout, stderr)
	}
	stdout, stderr, err = runSplit(t, "registry", "claim", "tenant-pool", "100.64.0.0/10", "--delegable", "--min-prefix-length=16", "--max-prefix-length=24",
		"--max-records-per-claim=2", "--reserve=100.127.0.0/16=infrastructure", "--reserve=100.126.0.0/16", "--reuse-grace-period=1h", kubeconfig, "-o", "yaml")
	if err != nil {
		t.Fatalf("registry claim tenant-pool -o yaml: %v\n%s", err, stderr)
	}
	var claim v1alpha1.NetworkClaim
	if err := yaml.UnmarshalStrict([]byte(stdout), &claim); err != nil {
		t.Fatalf("registry claim -o yaml: %v\n%s", err, stdout)
	}
	n := func(v int32) *int32 { return &v }
	hour := int64(3600)
	wantPolicy := &v1alpha1.PoolPolicy{
		MinPrefixLength: n(16), MaxPrefixLength: n(24), MaxRecordsPerClaim: n(2),
		Reservations:            []v1alpha1.PoolReservation{{Prefix: "100.127.0.0/16", Description: "infrastructure"}, {Prefix: "100.126.0.0/16"}},
		ReuseGracePeriodSeconds: &hour,
	}
	if got := claim.Spec.AddressSpace[0].Pool; !reflect.DeepEqual(got, wantPolicy) {
		t.Errorf("the stored policy: %+v, want %+v\n%s", got, wantPolicy, stdout)
	}

	stdout, stderr, err = runSplit(t, "registry", "claim", "tenant-a", "--from=tenant-pool", "--prefix-length=16", kubeconfig)
	if err != nil || !rowsMatch(tableRows(stdout), [][]string{{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"}, {"tenant-pool", "100.64.0.0/16", "Allocated", "-", "from tenant-pool 100.64.0.0/10"}}) {
		t.Fatalf("registry claim tenant-a: %v\n%s%s", err, stdout, stderr)
	}

	// The registry writes a pool's utilization within a second or so of
	// a change: ask until it shows tenant-a's /16.
	want = [][]string{
		{"CLAIM", "PREFIX", "USED", "ALLOCATED", "RESERVED", "FREE", "LARGEST FREE", "SUB-PREFIXES", "TENANTS", "POLICY"},
		{"lb", "198.20.0.0/16", "*", "*", "*", "*", "*", "*", "<none>", "<none>"},
		{"lb", "198.21.0.0/16", "*", "*", "*", "*", "*", "*", "<none>", "<none>"},
		// cluster-a, which took from it, is released; node-1 took from
		// cluster-a.
		{"org", "10.0.0.0/8", "*", "*", "*", "*", "*", "*", "<none>", "<none>"},
		{"org", "fd00::/32", "*", "*", "*", "*", "*", "*", "<none>", "<none>"},
		// 65536 allocated, 2 × 65536 reserved, of 4194304.
		{"tenant-pool", "100.64.0.0/10", "4%", "65536", "131072", "4M", "100.80.0.0/12", "1", "tenant-a", "/16-/24, 2 per claim, 2 reserved, grace 1h"},
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		stdout, stderr, err = runSplit(t, "registry", "pools", kubeconfig)
		return err == nil && rowsMatch(tableRows(stdout), want), nil
	})
	if err != nil {
		t.Errorf("registry pools: %v\n%s%s", err, stdout, stderr)
	}

	stdout, _, err = runSplit(t, "registry", "pools", kubeconfig, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pools []poolRecord
	if err := json.Unmarshal([]byte(stdout), &pools); err != nil || len(pools) != 5 {
		t.Fatalf("registry pools -o json: %v\n%s", err, stdout)
	}
	if got := pools[4]; got.Claim != "tenant-pool" || !reflect.DeepEqual(got.Policy, wantPolicy) || !slices.Equal(got.Tenants, []string{"tenant-a"}) ||
		!reflect.DeepEqual(got.SubPrefixes, []v1alpha1.ClaimedPrefix{{Claim: "tenant-a", Prefix: "100.64.0.0/16"}}) {
		t.Errorf("registry pools -o json, tenant-pool: %+v", got)
	}
}

// registry claim applies, waits and says what the registry decided;
// registry release deletes and says what was released. The control plane
// holds proxy's 198.18.0.0/16 and cni's unavailable 198.18.1.0/24.
func testRegistryClaimAndRelease(t *testing.T, kubeconfig string) {
	stdout, stderr, err := runSplit(t, "registry", "claim", "lb", "198.19.0.0/16", "--reference=servicecidrs.networking.k8s.io", "--description=lb range", kubeconfig)
	if err != nil {
		t.Fatalf("registry claim lb: %v\n%s", err, stderr)
	}
	want := [][]string{
		{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"},
		{"-", "198.19.0.0/16", "Allocated", "-", "lb range"},
	}
	if !rowsMatch(tableRows(stdout), want) {
		t.Errorf("registry claim lb:\n%s", stdout)
	}

	// Unavailable: the table says why, and the command fails, as kubectl
	// wait does when the condition is not met.
	stdout, _, err = runSplit(t, "registry", "claim", "lb2", "198.18.2.0/24", kubeconfig)
	if err == nil || err.Error() != "NetworkClaim lb2: 1 of 1 records unavailable; the claim stays, and the registry allocates them when the space they wait for is free (registry release lb2 withdraws it)" {
		t.Errorf("registry claim of an overlapping prefix: %v; want an error saying the record is unavailable", err)
	}
	want = [][]string{
		{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"},
		{"-", "198.18.2.0/24", "Unavailable", "Conflict", "overlaps 198.18.0.0/16 held by NetworkClaim proxy"},
	}
	if !rowsMatch(tableRows(stdout), want) {
		t.Errorf("registry claim lb2:\n%s", stdout)
	}

	// Claiming again replaces the records of the last claim with the same
	// field manager; -o yaml prints the claim.
	stdout, stderr, err = runSplit(t, "registry", "claim", "lb", "198.20.0.0/16", "198.21.0.0/16", "--delegable", kubeconfig, "-o", "yaml")
	if err != nil {
		t.Fatalf("registry claim lb again: %v\n%s", err, stderr)
	}
	var claim v1alpha1.NetworkClaim
	if err := yaml.UnmarshalStrict([]byte(stdout), &claim); err != nil {
		t.Fatalf("registry claim -o yaml: %v\n%s", err, stdout)
	}
	var held []string
	for _, a := range networkregistry.AllocationsOf(&claim) {
		held = append(held, fmt.Sprintf("%s delegable=%t", a.Prefix, a.Delegable))
	}
	if want := []string{"198.20.0.0/16 delegable=true", "198.21.0.0/16 delegable=true"}; !slices.Equal(held, want) || claim.Kind != "NetworkClaim" {
		t.Errorf("registry claim lb again holds %q, want %q:\n%s", held, want, stdout)
	}

	stdout, stderr, err = runSplit(t, "registry", "release", "lb2", kubeconfig)
	if err != nil {
		t.Fatalf("registry release lb2: %v\n%s", err, stderr)
	}
	rows := tableRows(stdout)
	want = [][]string{
		{"NetworkClaim lb2 released; it held:"},
		{"RECORD", "PREFIX", "STATUS"},
		{"-", "198.18.2.0/24", "Unavailable"},
	}
	if !rowsMatch(rows, want) {
		t.Errorf("registry release lb2:\n%s", stdout)
	}
	_, _, err = runSplit(t, "registry", "release", "lb2", kubeconfig)
	if err == nil || err.Error() != "NetworkClaim lb2 not found: nothing to release; registry list shows the claims there are" {
		t.Errorf("registry release of a released claim: %v; want an error saying it is not found", err)
	}

}

// registry claim --from takes prefixes from delegable ones; each record
// taken from a pool is applied on its own, and whois shows the chain.
func testRegistryClaimFromPool(t *testing.T, kubeconfig string) {
	if _, stderr, err := runSplit(t, "registry", "claim", "org", "10.0.0.0/8", "fd00::/32", "--delegable", "--reference=pods", "--description=org pods", kubeconfig); err != nil {
		t.Fatalf("registry claim org: %v\n%s", err, stderr)
	}
	steps := []struct {
		args []string
		want [][]string
	}{
		{
			args: []string{"--from=org", "--prefix-length=16", "--name=pods-v4", "--delegable"},
			want: [][]string{{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"}, {"pods-v4", "10.0.0.0/16", "Allocated", "-", "from org 10.0.0.0/8"}},
		},
		{
			// Another record of the same claim: the first one stays.
			args: []string{"--from=org", "--from-prefix=fd00::/32", "--prefix-length=48", "--name=pods-v6"},
			want: [][]string{
				{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"},
				{"pods-v4", "10.0.0.0/16", "Allocated", "-", "from org 10.0.0.0/8"},
				{"pods-v6", "fd00::/48", "Allocated", "-", "from org fd00::/32"},
			},
		},
	}
	for _, step := range steps {
		stdout, stderr, err := runSplit(t, append([]string{"registry", "claim", "cluster-a", kubeconfig}, step.args...)...)
		if err != nil || !rowsMatch(tableRows(stdout), step.want) {
			t.Fatalf("registry claim cluster-a %q: %v\n%s%s", step.args, err, stdout, stderr)
		}
	}
	// Three levels; the record is named after the claim it is taken from.
	stdout, stderr, err := runSplit(t, "registry", "claim", "node-1", "--from=cluster-a", "--prefix-length=24", kubeconfig)
	if err != nil || !rowsMatch(tableRows(stdout), [][]string{{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"}, {"cluster-a", "10.0.0.0/24", "Allocated", "-", "from cluster-a 10.0.0.0/16"}}) {
		t.Fatalf("registry claim node-1: %v\n%s%s", err, stdout, stderr)
	}
	// A pool without room.
	stdout, _, err = runSplit(t, "registry", "claim", "node-2", "--from=cluster-a", "--prefix-length=8", kubeconfig)
	if err == nil || !rowsMatch(tableRows(stdout), [][]string{{"RECORD", "PREFIX", "STATUS", "REASON", "DETAILS"}, {"cluster-a", "-", "Unavailable", "*", "*"}}) {
		t.Errorf("registry claim node-2 of a /8 from a /16: %v\n%s", err, stdout)
	}

	stdout, stderr, err = runSplit(t, "registry", "whois", "10.0.0.1", kubeconfig)
	if err != nil {
		t.Fatalf("registry whois 10.0.0.1: %v\n%s", err, stderr)
	}
	want := [][]string{
		{"PREFIX", "CLAIM", "REFERENCE", "ALLOCATED", "CHAIN", "DESCRIPTION"},
		{"10.0.0.0/8", "org", "pods", "*", "org", "org pods"},
		{"10.0.0.0/16", "cluster-a", "<none>", "*", "cluster-a ← org"},
		{"10.0.0.0/24", "node-1", "<none>", "*", "node-1 ← cluster-a ← org"},
	}
	if !rowsMatch(tableRows(stdout), want) {
		t.Errorf("registry whois 10.0.0.1:\n%s", stdout)
	}

	// Releasing a delegating claim says who keeps what it took.
	stdout, stderr, err = runSplit(t, "registry", "release", "cluster-a", kubeconfig)
	if err != nil || !strings.Contains(stdout, "10.0.0.0/24 stays with NetworkClaim node-1, which took it from 10.0.0.0/16\n") {
		t.Errorf("registry release cluster-a: %v\n%s%s", err, stdout, stderr)
	}
}

// tableRows splits a table into rows of cells: columns are separated by
// at least three spaces, as the tab writer pads them.
func tableRows(table string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		rows = append(rows, columnGap.Split(strings.TrimSpace(line), -1))
	}
	return rows
}

var columnGap = regexp.MustCompile(`\s{3,}`)

// rowsMatch compares rows with want, where "*" matches any cell.
func rowsMatch(rows, want [][]string) bool {
	if len(rows) != len(want) {
		return false
	}
	for i := range rows {
		if len(rows[i]) != len(want[i]) {
			return false
		}
		for j := range rows[i] {
			if want[i][j] != "*" && rows[i][j] != want[i][j] {
				return false
			}
		}
	}
	return true
}
