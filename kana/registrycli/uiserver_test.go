package registrycli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io/fs"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// uiTestServer serves a view of the claims, as registry ui would once it
// has read them.
func uiTestServer(t *testing.T, claims []*v1alpha1.NetworkClaim) *uiServer {
	t.Helper()
	s := newUIServer("https://127.0.0.1:6443", nil, nil, []string{"localhost", "127.0.0.1", "::1"})
	s.publish(buildView(snapshot(t, claims), s.nextVersion()))
	return s
}

// get asks s's handler for path as the page would (same origin), and
// decodes the JSON answer into out.
func get(t *testing.T, s *uiServer, path string, out any) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8001"+path, nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	s.handler().ServeHTTP(rec, req)
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %d, not JSON: %v\n%s", path, rec.Code, err, rec.Body)
		}
	}
	return rec.Code
}

// The page can only be read, only by its own host names, and never by
// another site's script: a page that acts with the kubeconfig's rights must
// not be a way into the cluster for every site the browser visits.
func TestUIGuard(t *testing.T) {
	s := uiTestServer(t, storyClaims())
	tests := []struct {
		name    string
		method  string
		url     string
		headers map[string]string
		want    int
	}{
		{name: "the page", url: "http://127.0.0.1:8001/", want: http.StatusOK},
		{name: "by localhost", url: "http://localhost:8001/api/overview", want: http.StatusOK},
		{name: "by IPv6 loopback", url: "http://[::1]:8001/api/overview", want: http.StatusOK},
		{name: "the page's own fetch", url: "http://127.0.0.1:8001/api/overview",
			headers: map[string]string{"Origin": "http://127.0.0.1:8001", "Sec-Fetch-Site": "same-origin"}, want: http.StatusOK},
		{name: "a person following a link to the page", url: "http://127.0.0.1:8001/",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, want: http.StatusOK},
		{name: "a script", url: "http://127.0.0.1:8001/static/app.js", want: http.StatusOK},
		{name: "another site's fetch", url: "http://127.0.0.1:8001/api/overview",
			headers: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, want: http.StatusForbidden},
		{name: "another site's no-cors request", url: "http://127.0.0.1:8001/api/whois?q=10.0.0.1",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, want: http.StatusForbidden},
		{name: "a sibling site's event stream", url: "http://127.0.0.1:8001/api/events",
			headers: map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"}, want: http.StatusForbidden},
		{name: "another origin on the same host", url: "http://127.0.0.1:8001/api/overview",
			headers: map[string]string{"Origin": "http://127.0.0.1:9999"}, want: http.StatusForbidden},
		{name: "DNS rebinding", url: "http://attacker.example:8001/api/overview", want: http.StatusForbidden},
		{name: "a write", method: http.MethodPost, url: "http://127.0.0.1:8001/api/overview", want: http.StatusMethodNotAllowed},
		{name: "a delete", method: http.MethodDelete, url: "http://127.0.0.1:8001/", want: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(cmp.Or(tc.method, http.MethodGet), tc.url, nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%s %s: %d, want %d; body %q", req.Method, tc.url, rec.Code, tc.want, rec.Body)
			}
			for header, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
				if got := rec.Header().Get(header); got != want {
					t.Errorf("%s: %q, want %q", header, got, want)
				}
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q, want scripts and styles from the page's own origin only, and no framing", csp)
			}
			if rec.Header().Get("Access-Control-Allow-Origin") != "" {
				t.Error("the server allows cross-origin reads")
			}
		})
	}

	// --accept-hosts names more.
	named := newUIServer("https://127.0.0.1:6443", nil, nil, []string{"localhost", "my-laptop.example.com"})
	for host, want := range map[string]bool{"my-laptop.example.com:8001": true, "MY-LAPTOP.example.com": true, "other.example.com:8001": false} {
		if got := named.hostAllowed(host); got != want {
			t.Errorf("with --accept-hosts=my-laptop.example.com, host %q allowed: %v, want %v", host, got, want)
		}
	}
	if any := newUIServer("", nil, nil, []string{"*"}); !any.hostAllowed("anything.example:80") {
		t.Error("--accept-hosts=* does not accept any host")
	}
}

// The page works offline: the page, its script and its style come from the
// binary, and name nothing elsewhere.
func TestUIAssetsSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//|fetch\(\s*["']https?:`)
	err := fs.WalkDir(uiFiles, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(uiFiles, path)
		if err != nil {
			return err
		}
		if m := external.Find(data); m != nil {
			t.Errorf("%s loads %q from elsewhere; the page must work offline", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := uiTestServer(t, nil)
	for path, contentType := range map[string]string{"/": "text/html", "/static/app.js": "javascript", "/static/app.css": "text/css"} {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8001"+path, nil)
		rec := httptest.NewRecorder()
		s.handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), contentType) {
			t.Errorf("GET %s: %d, Content-Type %q, want 200 and %s", path, rec.Code, rec.Header().Get("Content-Type"), contentType)
		}
	}
	var page bytes.Buffer
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8001/", nil)
	rec := httptest.NewRecorder()
	s.handler().ServeHTTP(rec, req)
	page.Write(rec.Body.Bytes())
	for _, want := range []string{`src="/static/app.js"`, `href="/static/app.css"`, `role="tree"`, `role="search"`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// The pools the page shows are registry pools' rows, figure for figure;
// a bar where addresses show honestly, /64s where they would not.
func TestUIPools(t *testing.T) {
	claims := storyClaims()
	s := uiTestServer(t, claims)
	var ov uiOverview
	if code := get(t, s, "/api/overview", &ov); code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	var table bytes.Buffer
	if err := printPools(&table, snapshot(t, claims).Pools()); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(table.String())[1:]
	if len(rows) != len(ov.Pools) {
		t.Fatalf("the page shows %d pools, registry pools %d", len(ov.Pools), len(rows))
	}
	for i, p := range ov.Pools {
		got := strings.Fields(strings.Join([]string{p.Claim, p.Prefix, p.Used, p.Allocated, p.Reserved, p.Free, p.LargestFree, p.SubPrefixes, p.Tenants, p.Policy}, " "))
		if strings.Join(got, " ") != strings.Join(rows[i], " ") {
			t.Errorf("pool %d on the page:\n%q\nregistry pools:\n%q", i, got, rows[i])
		}
	}
	if ov.State != uiStateReady || ov.Claims != len(claims) || ov.Pools[0].TenantCount != 3 {
		t.Errorf("overview: state %s, %d claims, first pool's tenants %d", ov.State, ov.Claims, ov.Pools[0].TenantCount)
	}

	v4, v6 := ov.Pools[0], ov.Pools[1]
	if v4.Bar == nil || v4.Blocks != nil {
		t.Fatalf("the IPv4 pool has bar %v and blocks %v, want a bar", v4.Bar, v4.Blocks)
	}
	// 196608 allocated, 65536 reserved, 65536 cooling of 2^24.
	if want := (uiBar{Allocated: 1.171875, Reserved: 0.390625, Cooling: 0.390625, Free: 98.046875}); *v4.Bar != want {
		t.Errorf("the IPv4 pool's bar %+v, want %+v", *v4.Bar, want)
	}
	if want := "1% used, 196608 allocated, 65536 reserved, 65536 cooling, 16.4M free, of 16.8M addresses"; v4.Summary != want {
		t.Errorf("the IPv4 pool's bar reads %q, want %q", v4.Summary, want)
	}
	// Three /48s of a /32: 3 × 65536 /64s of 2^32.
	if v6.Bar != nil || v6.Blocks == nil {
		t.Fatalf("the IPv6 pool has bar %v and blocks %v, want blocks", v6.Bar, v6.Blocks)
	}
	if want := (uiBlocks{Length: 64, Used: "196608", Total: "4.29G", Percent: "0.00458%"}); *v6.Blocks != want {
		t.Errorf("the IPv6 pool's blocks %+v, want %+v", *v6.Blocks, want)
	}
}

// The tree: roots, each allocation's delegated prefixes a page at a time,
// the records waiting for it, and the path down to an allocation.
func TestUITree(t *testing.T) {
	claims := append(delegationClaims(), &v1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: "10.1.0.0/20"}, {Prefix: "192.0.2.0/24"}}},
		Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
			Prefix: "10.1.0.0/20", Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: v1alpha1.ReasonConflict,
			Message: "overlaps 10.1.0.0/16 held by NetworkClaim cluster-b", ConflictsWith: &v1alpha1.ClaimedPrefix{Claim: "cluster-b", Prefix: "10.1.0.0/16"},
		}}},
	}, &v1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "later"},
		Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: "10.1.128.0/20"}}},
		Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
			Prefix: "10.1.128.0/20", Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: v1alpha1.ReasonConflict,
			Message: "overlaps 10.1.0.0/16 held by NetworkClaim cluster-b", ConflictsWith: &v1alpha1.ClaimedPrefix{Claim: "cluster-b", Prefix: "10.1.0.0/16"},
		}}},
	})
	s := uiTestServer(t, claims)
	keys := func(nodes []uiNode) string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Prefix+" "+n.Claim)
		}
		return strings.Join(out, ", ")
	}

	var roots uiNodes
	get(t, s, "/api/nodes", &roots)
	// node-2's pool is gone: it is a root of its own, and says where it was
	// delegated from.
	if got, want := keys(roots.Items), "10.0.0.0/8 org-pods, 10.2.0.0/24 node-2"; got != want || roots.Total != 2 {
		t.Errorf("roots %q (total %d), want %q", got, roots.Total, want)
	}
	if r := roots.Items[1].ReleasedFrom; r == nil || r.Claim != "cluster-z" || r.Prefix != "10.2.0.0/16" {
		t.Errorf("node-2's released pool %+v, want cluster-z 10.2.0.0/16", r)
	}
	if n := roots.Items[0]; n.Children != 1 || !n.Delegable || n.Reference != "pods" || n.Description != "pods of the org" {
		t.Errorf("org-pods' node %+v", n)
	}

	var pool uiNodes
	get(t, s, "/api/nodes?claim=cluster-b&prefix=10.1.0.0/16", &pool)
	if got, want := keys(pool.Items), "10.1.0.0/24 node-1"; got != want {
		t.Errorf("cluster-b's children %q, want %q", got, want)
	}
	if len(pool.Waiting) != 2 || pool.Waiting[0].Claim != "late" || pool.Waiting[0].WaitsFor == nil || pool.Waiting[0].WaitsFor.Claim != "cluster-b" || pool.Waiting[1].Claim != "later" {
		t.Errorf("waiting for cluster-b's pool: %+v, want late's 10.1.0.0/20 and later's 10.1.128.0/20", pool.Waiting)
	}

	// The records waiting for a pool come a page at a time too.
	var first uiNodes
	get(t, s, "/api/nodes?claim=cluster-b&prefix=10.1.0.0/16&limit=1", &first)
	if len(first.Waiting) != 1 || first.WaitingTotal != 2 {
		t.Errorf("waiting for cluster-b's pool, limit 1: %d of %d, want 1 of 2", len(first.Waiting), first.WaitingTotal)
	}

	var window uiNodes
	get(t, s, "/api/nodes?offset=1&limit=1", &window)
	if got := keys(window.Items); got != "10.2.0.0/24 node-2" || window.Total != 2 || window.Offset != 1 {
		t.Errorf("roots offset 1 limit 1: %q, total %d", got, window.Total)
	}

	var waiting uiRecords
	get(t, s, "/api/waiting", &waiting)
	var got []string
	for _, r := range waiting.Items {
		target := "-"
		if r.WaitsFor != nil {
			target = r.WaitsFor.Claim + " " + r.WaitsFor.Prefix
		}
		got = append(got, r.Claim+" "+cmp.Or(r.Prefix, "?")+" "+r.Status+" → "+target)
	}
	// Pending: late's second record is not decided yet.
	want := []string{"cluster-b ? Unavailable → org-pods fd00::/32", "late 10.1.0.0/20 Unavailable → cluster-b 10.1.0.0/16", "late 192.0.2.0/24 Pending → -",
		"later 10.1.128.0/20 Unavailable → cluster-b 10.1.0.0/16"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("waiting:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var steps []uiStep
	get(t, s, "/api/path?claim=node-1&prefix=10.1.0.0/24", &steps)
	if got, want := steps, []uiStep{{"org-pods", "10.0.0.0/8", 0}, {"cluster-b", "10.1.0.0/16", 0}, {"node-1", "10.1.0.0/24", 0}}; !slices.Equal(got, want) {
		t.Errorf("path to node-1: %+v, want %+v", got, want)
	}

	var claim uiClaim
	get(t, s, "/api/claim?name=late", &claim)
	if len(claim.Records) != 2 || !strings.Contains(claim.Waiting, "the registry allocates them when the space they wait for is free") {
		t.Errorf("claim late: %+v", claim)
	}

	for path, code := range map[string]int{
		"/api/nodes?claim=cluster-b&prefix=10.9.0.0/16": http.StatusNotFound,
		"/api/nodes?claim=cluster-b&prefix=10.1.0.0":    http.StatusBadRequest,
		"/api/nodes?limit=5000":                         http.StatusBadRequest,
		"/api/nodes?offset=-1":                          http.StatusBadRequest,
		"/api/path?claim=node-1&prefix=10.9.0.0/24":     http.StatusNotFound,
		"/api/claim?name=nobody":                        http.StatusNotFound,
		"/api/whois?q=10.0.0.300":                       http.StatusBadRequest,
	} {
		var body map[string]string
		if got := get(t, s, path, &body); got != code || body["error"] == "" {
			t.Errorf("GET %s: %d %v, want %d with an error that says what to write", path, got, body, code)
		}
	}
}

// Who holds an address answers as registry whois -o json does.
func TestUIWhois(t *testing.T) {
	claims := delegationClaims()
	s := uiTestServer(t, claims)
	var got []registryRecord
	get(t, s, "/api/whois?q=10.1.0.1", &got)
	var want bytes.Buffer
	r := snapshot(t, claims)
	allocations, _ := r.WhoHas("10.1.0.1")
	if err := printJSON(&want, recordsOfAllocations(allocations, r.Chain)); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.MarshalIndent(got, "", "  ")
	if string(gotJSON)+"\n" != want.String() {
		t.Errorf("whois on the page:\n%s\nregistry whois -o json:\n%s", gotJSON, want.String())
	}
	if len(got) != 3 || chainString(got[2]) != "node-1 ← cluster-b ← org-pods" {
		t.Errorf("whois 10.1.0.1: %+v, want node-1's chain up to org-pods", got)
	}
}

// The server follows the registry: a change made through the API reaches an
// open event stream as a newer view, which has it.
func TestUIFollow(t *testing.T) {
	client := fake.NewSimpleClientset()
	for _, c := range delegationClaims() {
		if err := client.Tracker().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubefake.NewSimpleClientset()
	kube.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "alice"}}}, nil
	})
	s := newUIServer("https://127.0.0.1:6443", client, kube, []string{"127.0.0.1"})
	ctx, cancel := context.WithTimeout(t.Context(), wait.ForeverTestTimeout)
	defer cancel()
	srv := httptest.NewServer(s.handler())
	defer srv.Close()

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: Content-Type %q", ct)
	}
	// The stream opened before the registry is read: its first view says
	// so, and the next ones follow.
	go s.follow(ctx)
	events := bufio.NewScanner(resp.Body)
	next := func(what string) (version uint64, state string) {
		t.Helper()
		for events.Scan() {
			data, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				continue
			}
			var v struct {
				Version uint64
				State   string
			}
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			return v.Version, v.State
		}
		t.Fatalf("the event stream ended before %s: %v", what, events.Err())
		return 0, ""
	}
	version, state := next("the first view")
	if version != 0 || state != uiStateConnecting {
		t.Errorf("the first event: version %d, state %s; want the view before the registry is read, 0 and %s", version, state, uiStateConnecting)
	}
	for state != uiStateReady {
		version, state = next("the registry read")
	}
	if v, _ := s.current(); v.nClaims != 4 || s.currentUser() != "alice" {
		t.Errorf("the first view has %d claims, user %q; want 4, alice", v.nClaims, s.currentUser())
	}

	late := &v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: "192.0.2.0/24"}}}}
	if _, err := client.NetworkingV1alpha1().NetworkClaims().Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		newer, _ := next("a view with the new claim")
		if newer <= version {
			t.Fatalf("the event stream sent version %d after %d", newer, version)
		}
		version = newer
		var claim uiClaim
		if srvGet(t, srv, "/api/claim?name=late", &claim) == http.StatusOK {
			break
		}
	}
	cancel()
}

func srvGet(t *testing.T, srv *httptest.Server, path string, out any) int {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// A user who may not list NetworkClaims gets a page that says so and what
// grants it, and the registry once it is granted.
func TestUIForbidden(t *testing.T) {
	client := fake.NewSimpleClientset()
	forbidden := true
	client.PrependReactor("list", "networkclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		if forbidden {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "networkclaims"}, "",
				errorString(`User "system:serviceaccount:team-a:viewer" cannot list resource "networkclaims"`))
		}
		return false, nil, nil
	})
	kube := kubefake.NewSimpleClientset()
	kube.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:team-a:viewer"}}}, nil
	})
	s := newUIServer("https://127.0.0.1:6443", client, kube, []string{"127.0.0.1"})
	s.retry = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.follow(ctx)

	ov := waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateProblem })
	p := ov.Problem
	if p.Reason != "Forbidden" || !strings.Contains(p.Message, `User "system:serviceaccount:team-a:viewer" may not list and watch NetworkClaims`) ||
		!strings.Contains(p.Needed, "view ClusterRole") ||
		p.Grant != "kubectl create clusterrolebinding viewer-registry-view --clusterrole=view --serviceaccount=team-a:viewer" ||
		!strings.Contains(p.Error, "cannot list") {
		t.Errorf("the problem shown: %+v", p)
	}
	// The pools, tree and search answer nothing rather than fail.
	var nodes uiNodes
	if code := get(t, s, "/api/nodes", &nodes); code != http.StatusOK || nodes.Total != 0 {
		t.Errorf("nodes while forbidden: %d %+v", code, nodes)
	}
	if code := get(t, s, "/api/whois?q=10.0.0.1", &map[string]string{}); code != http.StatusServiceUnavailable {
		t.Errorf("whois while forbidden: %d, want 503", code)
	}

	client.Lock()
	forbidden = false
	client.Unlock()
	waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateReady })
}

type errorString string

func (e errorString) Error() string { return string(e) }

// waitOverview waits until the overview satisfies done, following the
// server's views.
func waitOverview(t *testing.T, s *uiServer, done func(uiOverview) bool) uiOverview {
	t.Helper()
	deadline := time.After(wait.ForeverTestTimeout)
	for {
		_, published := s.current()
		var ov uiOverview
		get(t, s, "/api/overview", &ov)
		if done(ov) {
			return ov
		}
		select {
		case <-published:
		case <-deadline:
			t.Fatalf("the overview is still %+v", ov)
		}
	}
}

// grantView names the subject as kubectl create clusterrolebinding takes it.
func TestGrantView(t *testing.T) {
	for user, want := range map[string]string{
		"":                                 "kubectl create clusterrolebinding registry-view --clusterrole=view --user=USER",
		"alice@example.com":                "kubectl create clusterrolebinding registry-view-alice-example-com --clusterrole=view --user=alice@example.com",
		"system:serviceaccount:ns-1:robot": "kubectl create clusterrolebinding robot-registry-view --clusterrole=view --serviceaccount=ns-1:robot",
		"oidc:Alice O'Neil #1; rm -rf":     `kubectl create clusterrolebinding registry-view-oidc-alice-o-neil-1-rm-rf --clusterrole=view --user='oidc:Alice O'\''Neil #1; rm -rf'`,
	} {
		if got := grantView(user); got != want {
			t.Errorf("grantView(%q) = %q, want %q", user, got, want)
		}
	}
}

// A pool's use reads honestly at every size: a bar up to 2^32 addresses,
// then /64s, and addresses for an IPv6 pool smaller than a /64; the
// percentage keeps three significant digits without an exponent.
func TestUIPoolUse(t *testing.T) {
	number := func(s string) *big.Int {
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatalf("%q is not a number", s)
		}
		return n
	}
	pool := func(prefix, size, allocated string) networkregistry.Pool {
		free := new(big.Int).Sub(number(size), number(allocated))
		return networkregistry.Pool{
			Allocation:  networkregistry.Allocation{Claim: "org", Prefix: netip.MustParsePrefix(prefix)},
			Utilization: &networkregistry.PoolUtilization{Size: number(size), Allocated: number(allocated), Reserved: new(big.Int), Cooling: new(big.Int), Free: free},
		}
	}
	tests := []struct {
		name    string
		pool    networkregistry.Pool
		bar     bool
		summary string
	}{
		{"an IPv4 /8", pool("10.0.0.0/8", "16777216", "65536"), true, "0% used, 65536 allocated, 0 reserved, 0 cooling, 16.7M free, of 16.8M addresses"},
		{"an IPv6 /96: a bar", pool("fd00::/96", "4294967296", "65536"), true, "0% used, 65536 allocated, 0 reserved, 0 cooling, 4.29G free, of 4.29G addresses"},
		{"an IPv6 /32 with one /64 taken", pool("fd00::/32", "79228162514264337593543950336", "18446744073709551616"), false,
			"1 of 4.29G /64s in use (0.0000000233%), 1.84e19 addresses allocated, 0 reserved, 0 cooling"},
		{"an IPv6 /64", pool("fd00::/64", "18446744073709551616", "65536"), false,
			"65536 of 1.84e19 addresses in use (0.000000000000355%), 65536 addresses allocated, 0 reserved, 0 cooling"},
		{"an IPv6 /80 half used", pool("fd00::/80", "281474976710656", "140737488355328"), false,
			"1.41e14 of 2.81e14 addresses in use (50.0%), 1.41e14 addresses allocated, 0 reserved, 0 cooling"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := uiPoolOf(tc.pool)
			if (p.Bar != nil) != tc.bar || (p.Blocks != nil) == tc.bar {
				t.Errorf("bar %v, blocks %v; want a bar: %v", p.Bar, p.Blocks, tc.bar)
			}
			if p.Summary != tc.summary {
				t.Errorf("summary %q, want %q", p.Summary, tc.summary)
			}
		})
	}
}

// After the registry was read, a control plane that stops answering marks
// the page stale, and one that refuses the user (RBAC revoked) shows why:
// the informer would retry in silence, and the page must not say live.
func TestUIFollowsTheControlPlaneAfterTheRead(t *testing.T) {
	client := fake.NewSimpleClientset()
	for _, c := range delegationClaims() {
		if err := client.Tracker().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	var fail error
	client.PrependReactor("list", "networkclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail != nil {
			return true, nil, fail
		}
		return false, nil, nil
	})
	setFail := func(err error) {
		client.Lock()
		defer client.Unlock()
		fail = err
	}
	s := newUIServer("https://127.0.0.1:6443", client, nil, []string{"127.0.0.1"})
	s.retry = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.follow(ctx)
	waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateReady && ov.Stale == "" })

	setFail(apierrors.NewInternalError(errorString("etcd is down")))
	ov := waitOverview(t, s, func(ov uiOverview) bool { return ov.Stale != "" })
	if ov.State != uiStateReady || !strings.Contains(ov.Stale, "The control plane has not answered since") || !strings.Contains(ov.Stale, "etcd is down") {
		t.Errorf("while the control plane fails: state %s, stale %q", ov.State, ov.Stale)
	}
	setFail(nil)
	waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateReady && ov.Stale == "" })

	setFail(apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "networkclaims"}, "", errorString("RBAC revoked")))
	ov = waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateProblem })
	if ov.Problem.Reason != "Forbidden" {
		t.Errorf("after the user lost the right to list: %+v", ov.Problem)
	}
	setFail(nil)
	waitOverview(t, s, func(ov uiOverview) bool { return ov.State == uiStateReady })
}
