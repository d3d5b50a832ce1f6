package registrycli

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// uiFiles are the page and its script and style, served as they are: the
// page works offline, with nothing fetched from elsewhere.
//
//go:embed ui
var uiFiles embed.FS

const (
	// uiSettle is how long after a change the server waits for more
	// before it builds a new view: a claim and its status are often
	// written moments apart.
	uiSettle = 100 * time.Millisecond
	// uiRetry is how long the server waits before reading the registry
	// again after the control plane refused it (RBAC may change).
	uiRetry = 5 * time.Second
	// uiKeepAlive is how often an idle event stream sends a comment, so
	// that the page learns of a dead server.
	uiKeepAlive = 15 * time.Second
	// uiPageSize is how many tree nodes or records one request returns
	// unless it asks for fewer; uiMaxPageSize the most it may ask for.
	uiPageSize    = 100
	uiMaxPageSize = 1000
)

// uiServer serves registry ui: the page, and the views it reads, built
// from a networkregistry.Registry that follows the control plane.
type uiServer struct {
	host   string // the control plane's URL, for the page's header
	client versioned.Interface
	kube   kubernetes.Interface
	// hosts are the Host header names the server answers to (any when
	// anyHost): a page of another name is a DNS rebinding.
	hosts   sets.Set[string]
	anyHost bool
	// retry is how long to wait before reading a registry that was
	// refused again: uiRetry.
	retry time.Duration

	mu sync.Mutex
	// user is who the kubeconfig authenticates as, once known.
	user string
	// view is the latest view; published is closed, and replaced, when
	// a newer one is.
	view      *uiView
	published chan struct{}
	version   uint64
}

func newUIServer(host string, client versioned.Interface, kube kubernetes.Interface, hosts []string) *uiServer {
	s := &uiServer{host: host, client: client, kube: kube, hosts: sets.New[string](), published: make(chan struct{}), retry: uiRetry}
	for _, h := range hosts {
		if h == "*" {
			s.anyHost = true
		}
		s.hosts.Insert(strings.ToLower(strings.Trim(h, "[]")))
	}
	s.view = problemView(0, uiStateConnecting, nil)
	return s
}

// current returns the latest view, and a channel closed when a newer one
// is published.
func (s *uiServer) current() (*uiView, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view, s.published
}

func (s *uiServer) publish(v *uiView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.view = v
	close(s.published)
	s.published = make(chan struct{})
}

func (s *uiServer) currentUser() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// nextVersion is the version of the next view; only follow builds views.
func (s *uiServer) nextVersion() uint64 {
	s.version++
	return s.version
}

// follow keeps the view up to date until ctx ends: it reads the registry,
// then builds a view after each change; when the control plane refuses to
// show the registry, it publishes why and tries again.
func (s *uiServer) follow(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		s.learnUser(ctx)
		// A registry per attempt: its informer stops with its context.
		registryCtx, stop := context.WithCancel(ctx)
		r := networkregistry.New(s.client, "")
		err := r.Start(registryCtx)
		if err == nil {
			err = s.followRegistry(registryCtx, r)
		}
		stop()
		if ctx.Err() != nil {
			return
		}
		logger.V(2).Info("The registry cannot be read; trying again", "after", s.retry, "err", err)
		s.publish(problemView(s.nextVersion(), uiStateProblem, s.explain(err)))
		select {
		case <-ctx.Done():
		case <-time.After(s.retry):
		}
	}
}

// learnUser asks who the kubeconfig's user is, until the server says.
func (s *uiServer) learnUser(ctx context.Context) {
	if s.currentUser() != "" {
		return
	}
	user := s.whoAmI(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user = user
}

// followRegistry builds a view of r after each change, until ctx ends or
// the control plane refuses the registry. A build follows a change by
// uiSettle, and the last build by its cost, so that a stream of changes
// costs the server at most half its time. Every s.retry it
// asks the control plane for a claim: the informer retries a failed watch
// on its own, without a word to its owner, and the page must not say live
// while nothing comes. A refusal (RBAC revoked, credentials expired) ends
// the follow, to show why; a failure marks the view stale until the
// control plane answers again.
func (s *uiServer) followRegistry(ctx context.Context, r *networkregistry.Registry) error {
	logger := klog.FromContext(ctx)
	probe := time.NewTicker(s.retry)
	defer probe.Stop()
	var v *uiView
	var built time.Time
	var cost time.Duration
	for {
		changed := r.Changed()
		start := time.Now()
		v = buildView(r, s.nextVersion())
		built = time.Now()
		cost = built.Sub(start)
		s.publish(v)
		logger.V(4).Info("Built a view of the registry", "version", v.version, "claims", v.nClaims, "cost", cost)
	wait:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
				break wait
			case <-probe.C:
				err := s.probe(ctx)
				switch {
				case err != nil && networkregistryPermanent(err):
					return err
				case err != nil && v.stale == "":
					v = v.withStale(s.nextVersion(), fmt.Sprintf("The control plane has not answered since %s: %v", time.Now().Format(time.TimeOnly), err))
					s.publish(v)
				case err == nil && v.stale != "":
					v = v.withStale(s.nextVersion(), "")
					s.publish(v)
				}
			}
		}
		wait := max(uiSettle, time.Until(built.Add(cost)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// probe asks the control plane for one NetworkClaim, as the user.
func (s *uiServer) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.retry)
	defer cancel()
	_, err := s.client.NetworkingV1alpha1().NetworkClaims().List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// networkregistryPermanent reports whether err is a refusal that asking
// again does not change, as networkregistry.Start tells them.
func networkregistryPermanent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}

// whoAmI is the name of the user the kubeconfig authenticates as, or ""
// when the server does not say.
func (s *uiServer) whoAmI(ctx context.Context) string {
	if s.kube == nil {
		return ""
	}
	// An unreachable server must not hold the registry's own retries.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	review, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The server did not say who the kubeconfig's user is", "err", err)
		return ""
	}
	return review.Status.UserInfo.Username
}

// explain says why the registry cannot be read, and what to do about it.
func (s *uiServer) explain(err error) *uiProblem {
	user := s.currentUser()
	who := "The kubeconfig's user"
	if user != "" {
		who = fmt.Sprintf("User %q", user)
	}
	p := &uiProblem{Error: err.Error()}
	switch {
	case apierrors.IsForbidden(err):
		p.Reason, p.Title = "Forbidden", "Not allowed to read the registry"
		p.Message = who + " may not list and watch NetworkClaims on " + s.host + ". This page shows what that user may see, and nothing more."
		p.Needed = "get, list and watch on networkclaims (group " + v1alpha1.GroupName + "), cluster-wide. The view ClusterRole includes them."
		p.Grant = grantView(user)
	case apierrors.IsUnauthorized(err):
		p.Reason, p.Title = "Unauthorized", "The control plane did not accept the kubeconfig's credentials"
		p.Message = "The server at " + s.host + " answered 401 Unauthorized: the kubeconfig's certificate or token is not (or no longer) valid there. Get a fresh kubeconfig from the control plane's administrator."
	case apierrors.IsNotFound(err):
		p.Reason, p.Title = "NotServed", "The control plane does not serve NetworkClaims"
		p.Message = "The server at " + s.host + " has no " + v1alpha1.SchemeGroupVersion.String() + " API: is its KANA feature gate off?"
	default:
		p.Reason, p.Title = "Unreachable", "The registry could not be read"
		p.Message = "Reading the NetworkClaims of " + s.host + " failed; this page tries again every few seconds."
	}
	return p
}

// grantView is the command that grants user the view ClusterRole.
func grantView(user string) string {
	if user == "" {
		return "kubectl create clusterrolebinding registry-view --clusterrole=view --user=USER"
	}
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if namespace, name, ok := strings.Cut(sa, ":"); ok {
			return fmt.Sprintf("kubectl create clusterrolebinding %s-registry-view --clusterrole=view --serviceaccount=%s:%s", name, namespace, name)
		}
	}
	return fmt.Sprintf("kubectl create clusterrolebinding registry-view-%s --clusterrole=view --user=%s", bindingSuffix(user), shellQuote(user))
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters of plain user names: an identity provider's names may hold
// spaces, # or ; that a pasted command must not run.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@._:-/=+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// bindingSuffix makes a user name fit in an object name.
func bindingSuffix(user string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(user) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// handler serves the page and its API, behind guard.
func (s *uiServer) handler() http.Handler {
	static, _ := fs.Sub(uiFiles, "ui") // ui is embedded: it exists
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", http.FileServerFS(static))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/overview", s.overview)
	mux.HandleFunc("GET /api/nodes", s.nodes)
	mux.HandleFunc("GET /api/waiting", s.waitingRecords)
	mux.HandleFunc("GET /api/whois", s.whois)
	mux.HandleFunc("GET /api/claim", s.claim)
	mux.HandleFunc("GET /api/path", s.path)
	mux.HandleFunc("GET /api/events", s.events)
	return s.guard(mux)
}

// guard refuses what a page of another origin could ask: requests whose
// Host is not one this server answers to (a DNS rebinding), requests made
// by another site's script, and anything but GET and HEAD. It sets the
// headers that keep the page out of other sites' frames.
func (s *uiServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "registry ui only reads: "+r.Method+" is not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !s.hostAllowed(r.Host) {
			http.Error(w, fmt.Sprintf("registry ui does not answer to host %q; open it by the address it printed, or name the host with --accept-hosts", r.Host), http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
			http.Error(w, fmt.Sprintf("cross-origin request from %s refused", origin), http.StatusForbidden)
			return
		}
		// Browsers say where a request comes from; only a person's own
		// navigation to the page may come from elsewhere.
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin", "none":
		default:
			if r.URL.Path != "/" || r.Header.Get("Sec-Fetch-Mode") != "navigate" {
				http.Error(w, "cross-site request refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header names this server.
func (s *uiServer) hostAllowed(hostport string) bool {
	if s.anyHost {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return s.hosts.Has(strings.ToLower(strings.Trim(host, "[]")))
}

// uiOverview is what the page shows first: the state, the pools and the
// counts.
type uiOverview struct {
	Version uint64     `json:"version"`
	State   string     `json:"state"`
	Problem *uiProblem `json:"problem,omitempty"`
	// Stale says why the view may be behind the control plane.
	Stale       string    `json:"stale,omitempty"`
	Server      string    `json:"server"`
	User        string    `json:"user"`
	Built       time.Time `json:"built"`
	Claims      int       `json:"claims"`
	Allocations int       `json:"allocations"`
	Roots       int       `json:"roots"`
	Waiting     int       `json:"waiting"`
	Pools       []uiPool  `json:"pools"`
}

func (s *uiServer) overview(w http.ResponseWriter, _ *http.Request) {
	v, _ := s.current()
	out := uiOverview{
		Version: v.version, State: v.state, Problem: v.problem, Stale: v.stale, Server: s.host, User: s.currentUser(), Built: v.built,
		Claims: v.nClaims, Allocations: len(v.allocations), Roots: len(v.roots), Waiting: len(v.waiting), Pools: v.pools,
	}
	if out.Pools == nil {
		out.Pools = []uiPool{}
	}
	writeJSON(w, http.StatusOK, out)
}

// uiNode is an allocation in the tree.
type uiNode struct {
	Claim       string    `json:"claim"`
	Name        string    `json:"name,omitempty"`
	Prefix      string    `json:"prefix"`
	Reference   string    `json:"reference"`
	Description string    `json:"description,omitempty"`
	Delegable   bool      `json:"delegable,omitempty"`
	Date        time.Time `json:"date"`
	// Children counts the allocations delegated from it, Waiting the
	// records that wait for it.
	Children int `json:"children"`
	Waiting  int `json:"waiting"`
	// ReleasedFrom names the allocation it was delegated from when that
	// one is gone: it keeps its prefix.
	ReleasedFrom *uiTarget `json:"releasedFrom,omitempty"`
}

// uiNodes is one page of an allocation's children (or of the roots).
type uiNodes struct {
	Version uint64   `json:"version"`
	Total   int      `json:"total"`
	Offset  int      `json:"offset"`
	Items   []uiNode `json:"items"`
	// Waiting are the first records waiting for the allocation, up to
	// the page's limit, of WaitingTotal.
	Waiting      []uiRecord `json:"waiting"`
	WaitingTotal int        `json:"waitingTotal"`
}

// nodes answers the children of the allocation claim and prefix name, or
// the roots when they name none, a page at a time: offset and limit.
func (s *uiServer) nodes(w http.ResponseWriter, r *http.Request) {
	v, _ := s.current()
	offset, limit, err := pageParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	list := v.roots
	out := uiNodes{Version: v.version, Offset: offset, Items: []uiNode{}, Waiting: []uiRecord{}}
	if r.URL.Query().Get("claim") != "" {
		key, err := targetParams(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if _, held := v.allocations[key]; !held {
			writeError(w, http.StatusNotFound, fmt.Errorf("%s does not hold %s (any more)", key.Claim, key.Prefix))
			return
		}
		list = v.children[key]
		out.WaitingTotal = len(v.waitingOn[key])
		for _, i := range page(v.waitingOn[key], 0, limit) {
			out.Waiting = append(out.Waiting, v.waiting[i])
		}
	}
	out.Total = len(list)
	for _, i := range page(list, offset, limit) {
		out.Items = append(out.Items, v.node(v.allocs[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (v *uiView) node(a networkregistry.Allocation) uiNode {
	key := claimedPrefix(a)
	n := uiNode{
		Claim: a.Claim, Name: a.Name, Prefix: a.Prefix.String(), Reference: referenceString(a.Reference), Description: a.Description,
		Delegable: a.Delegable, Date: a.Date, Children: len(v.children[key]), Waiting: len(v.waitingOn[key]),
	}
	if from := a.DelegatedFrom; from != nil {
		if _, held := v.allocations[*from]; !held {
			n.ReleasedFrom = &uiTarget{Claim: from.Claim, Prefix: from.Prefix.String()}
		}
	}
	return n
}

// uiRecords is one page of records.
type uiRecords struct {
	Version uint64     `json:"version"`
	Total   int        `json:"total"`
	Offset  int        `json:"offset"`
	Items   []uiRecord `json:"items"`
}

// waitingRecords answers the records that are not allocated, a page at a
// time.
func (s *uiServer) waitingRecords(w http.ResponseWriter, r *http.Request) {
	v, _ := s.current()
	offset, limit, err := pageParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	out := uiRecords{Version: v.version, Total: len(v.waiting), Offset: offset, Items: page(v.waiting, offset, limit)}
	if out.Items == nil {
		out.Items = []uiRecord{}
	}
	writeJSON(w, http.StatusOK, out)
}

// whois answers as registry whois -o json does: the allocations that hold
// q, an address or a prefix, each with its delegation chain.
func (s *uiServer) whois(w http.ResponseWriter, r *http.Request) {
	v, _ := s.current()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if _, err := networkregistry.ParseAddrOrPrefix(q); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if v.registry == nil {
		writeError(w, http.StatusServiceUnavailable, errors.New("the registry has not been read yet"))
		return
	}
	allocations, _ := v.registry.WhoHas(q) // q parsed above
	records := recordsOfAllocations(allocations, v.registry.Chain)
	if records == nil {
		records = []registryRecord{}
	}
	writeJSON(w, http.StatusOK, records)
}

// uiClaim is one claim's records, as registry list shows them.
type uiClaim struct {
	Name    string     `json:"name"`
	Records []uiRecord `json:"records"`
	// Waiting says what its records that are not allocated wait for,
	// as registry claim does.
	Waiting string `json:"waiting,omitempty"`
}

func (s *uiServer) claim(w http.ResponseWriter, r *http.Request) {
	v, _ := s.current()
	name := r.URL.Query().Get("name")
	var c *v1alpha1.NetworkClaim
	if v.registry != nil {
		c = v.registry.NetworkClaim(name)
	}
	if c == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("no NetworkClaim %q", name))
		return
	}
	out := uiClaim{Name: name, Records: []uiRecord{}}
	for _, row := range recordsOfClaims([]*v1alpha1.NetworkClaim{c}) {
		out.Records = append(out.Records, uiRecord{registryRecord: row, WaitsFor: waitsFor(row)})
	}
	decisions := networkregistry.Decisions(c)
	if countNotAllocated(decisions) > 0 {
		out.Waiting = waitingFor(decisions)
	}
	writeJSON(w, http.StatusOK, out)
}

// uiStep is one step of the path from a root to an allocation: the
// allocation and where it is in its parent's children.
type uiStep struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix"`
	Index  int    `json:"index"`
}

// path answers the steps from a root down to the allocation claim and
// prefix, so that the page can open the tree to it.
func (s *uiServer) path(w http.ResponseWriter, r *http.Request) {
	v, _ := s.current()
	key, err := targetParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var steps []uiStep
	seen := map[networkregistry.ClaimedPrefix]bool{}
	for {
		at, held := v.allocations[key]
		if !held || seen[key] {
			writeError(w, http.StatusNotFound, fmt.Errorf("%s does not hold %s (any more)", key.Claim, key.Prefix))
			return
		}
		seen[key] = true
		a := v.allocs[at]
		siblings := v.roots
		from := a.DelegatedFrom
		if from != nil {
			if _, held := v.allocations[*from]; held {
				siblings = v.children[*from]
			} else {
				from = nil
			}
		}
		i, _ := v.indexOf(siblings, key)
		steps = append(steps, uiStep{Claim: key.Claim, Prefix: key.Prefix.String(), Index: i})
		if from == nil {
			break
		}
		key = *from
	}
	for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
		steps[i], steps[j] = steps[j], steps[i]
	}
	writeJSON(w, http.StatusOK, steps)
}

// events streams the version of each new view (Server-Sent Events), so
// that the page asks again for what it shows.
func (s *uiServer) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	keepAlive := time.NewTicker(uiKeepAlive)
	defer keepAlive.Stop()
	var sent uint64
	first := true
	for {
		v, published := s.current()
		if first || v.version != sent {
			first = false
			data, _ := json.Marshal(struct {
				Version uint64 `json:"version"`
				State   string `json:"state"`
			}{v.version, v.state})
			if _, err := fmt.Fprintf(w, "event: view\ndata: %s\n\n", data); err != nil {
				return
			}
			sent = v.version
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-published:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// pageParams reads offset and limit.
func pageParams(r *http.Request) (offset, limit int, err error) {
	q := r.URL.Query()
	limit = uiPageSize
	if s := q.Get("offset"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			return 0, 0, fmt.Errorf("offset %q: write a count of items to skip, e.g. offset=100", s)
		}
	}
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > uiMaxPageSize {
			return 0, 0, fmt.Errorf("limit %q: write 1 to %d, e.g. limit=%d", s, uiMaxPageSize, uiPageSize)
		}
	}
	return offset, limit, nil
}

// targetParams reads claim and prefix.
func targetParams(r *http.Request) (networkregistry.ClaimedPrefix, error) {
	q := r.URL.Query()
	p, err := netip.ParsePrefix(q.Get("prefix"))
	if err != nil || q.Get("claim") == "" {
		return networkregistry.ClaimedPrefix{}, fmt.Errorf("claim %q and prefix %q: write a NetworkClaim's name and one of its allocated prefixes, e.g. claim=org-pods&prefix=10.0.0.0/8", q.Get("claim"), q.Get("prefix"))
	}
	return networkregistry.ClaimedPrefix{Claim: q.Get("claim"), Prefix: p.Masked()}, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
