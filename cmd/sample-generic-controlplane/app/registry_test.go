package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
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
		{name: "list -o yaml", args: []string{"registry", "list", kubeconfig, "-o", "yaml"}, wantErr: []string{`-o: unknown output format "yaml"; write -o json or leave it out`}},
		{name: "whois --output=wide", args: []string{"registry", "whois", "10.96.0.1", kubeconfig, "--output=wide"}, wantErr: []string{`unknown output format "wide"`}},
		{name: "whois without an address", args: []string{"registry", "whois", kubeconfig}, wantErr: []string{"whois takes one IP address or prefix", "whois 10.96.0.1"}},
		{name: "whois with two addresses", args: []string{"registry", "whois", "10.0.0.1", "10.0.0.2", kubeconfig}, wantErr: []string{"whois takes one IP address or prefix", "got 2"}},
		{name: "whois not an address", args: []string{"registry", "whois", "10.96.0.300", kubeconfig}, wantErr: []string{`"10.96.0.300": write an IP address such as 10.96.0.1 or a prefix such as 10.96.0.0/12`}},
		{name: "list with an argument", args: []string{"registry", "list", "everything", kubeconfig}, wantErr: []string{`"everything"`}},
		{name: "unknown subcommand", args: []string{"registry", "lookup"}, wantErr: []string{`unknown command "lookup"`}},
		{name: "zero timeout", args: []string{"registry", "list", kubeconfig, "--timeout=0s"}, wantErr: []string{"--timeout must be positive"}},
		{name: "kubeconfig missing", args: []string{"registry", "list", kubeconfig}, wantErr: []string{"--kubeconfig /nonexistent/admin.kubeconfig", "no such file"}},
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

func TestRegistryHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{args: []string{"registry", "--help"}, want: []string{"list ", "whois ", "NetworkClaim", "registry <command> [--kubeconfig=FILE]", "$KUBECONFIG, else in ~/.kube/config"}},
		{args: []string{"registry", "list", "--help"}, want: []string{"registry list [--kubeconfig=FILE]", "SINCE is how long ago the registry decided", "to $KUBECONFIG, then ~/.kube/config", "--timeout"}},
		{args: []string{"registry", "whois", "--help"}, want: []string{"registry whois <ip|prefix> [--kubeconfig=FILE]", "to $KUBECONFIG, then ~/.kube/config"}},
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

func TestPrintWhois(t *testing.T) {
	allocations := []networkregistry.Allocation{
		{Claim: "kube-apiserver", Prefix: netip.MustParsePrefix("10.96.0.0/12"), Reference: servicesRef, Description: "Service ClusterIPs", Date: registryDecidedAt.Time},
		{Claim: "lb", Prefix: netip.MustParsePrefix("10.96.8.0/24"), Date: registryDecidedAt.In(time.FixedZone("CET", 3600))},
	}
	var out bytes.Buffer
	if err := printWhois(&out, recordsOfAllocations(allocations)); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"PREFIX         CLAIM            REFERENCE   ALLOCATED              DESCRIPTION",
		"10.96.0.0/12   kube-apiserver   services    2026-03-02T11:00:00Z   Service ClusterIPs",
		"10.96.8.0/24   lb               <none>      2026-03-02T11:00:00Z   ",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("whois table:\n%s\nwant:\n%s", out.String(), want)
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
			}),
			want: `[{"claim": "kube-apiserver", "prefix": "10.96.0.0/12", "status": "Allocated", "reference": {"group": "", "resource": "services"},
			        "description": "Service ClusterIPs", "date": "2026-03-02T11:00:00Z"}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printJSON(&out, tc.records); err != nil {
				t.Fatal(err)
			}
			var compact, want bytes.Buffer
			if err := json.Compact(&compact, out.Bytes()); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out.String())
			}
			if err := json.Compact(&want, []byte(tc.want)); err != nil {
				t.Fatal(err)
			}
			if compact.String() != want.String() {
				t.Errorf("JSON:\n%s\nwant:\n%s", compact.String(), want.String())
			}
		})
	}
}

// runSplit runs the command with args and returns its stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := NewCommand()
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
		{"PREFIX", "CLAIM", "REFERENCE", "ALLOCATED", "DESCRIPTION"},
		{"198.18.0.0/16", "proxy", "services", "*", "proxy range"},
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
