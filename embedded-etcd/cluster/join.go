package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// JoinRequest is what a joining server sends: who its member is and where
// its peers reach it.
type JoinRequest struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

// JoinResponse is what the cluster answers a server whose token it
// accepted: what its member needs to start, and the credentials every
// server of the cluster shares. The answer to a dry run has the
// credentials alone: no member was added (MemberID is empty).
type JoinResponse struct {
	// MemberID is the new member's ID, in hex.
	MemberID string `json:"memberID"`
	// InitialCluster lists every member with its peer URLs, the new one
	// included, as etcd's --initial-cluster.
	InitialCluster string `json:"initialCluster"`
	// Credentials are SharedFiles by name.
	Credentials map[string][]byte `json:"credentials"`
	// EncryptionConfig is the content of the server's
	// --encryption-provider-config, if it has one.
	EncryptionConfig []byte `json:"encryptionConfig,omitempty"`
}

// Validate checks a join request, naming the flag a user sets.
func (r JoinRequest) Validate() error {
	if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
		return fmt.Errorf("member name %q: %s", r.Name, strings.Join(errs, "; "))
	}
	u, err := url.Parse(r.PeerURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" || u.Path != "" {
		return fmt.Errorf("peer URL %q must be https://ADDRESS:PORT; set --advertise-address (or --bind-address) and --etcd-peer-port", r.PeerURL)
	}
	return nil
}

// JoinTimeout bounds how long a joining server keeps asking while the
// cluster is busy with the joins before its own (one learner at a time),
// or cannot be reached.
const JoinTimeout = 2 * time.Minute

// waitPerRequest bounds how long one join request waits for its turn
// before it answers 503 and the joining server asks again: well within
// the API server's deadline for requests that are not long-running
// (--request-timeout, 60 s).
const waitPerRequest = 20 * time.Second

// learnerWaitPoll is how often a waiting join looks whether the learner
// before it was promoted.
const learnerWaitPoll = 200 * time.Millisecond

// JoinHandler serves jointoken.JoinPath on a server of the cluster. The API
// server's authentication (JoinTokenAuthenticator) and authorization (the
// control plane's join-token role) let only a valid join token through; the
// handler then adds the joining member as a learner, one join at a time,
// uses the token (taking the member out again should that fail), and
// answers with what the new server needs.
//
// With ?dryRun=All, as the API's own dry runs, it checks the token without
// using it and the request against the members, and answers with the
// shared credentials alone: the joining server completes and checks its
// own configuration with them before it asks for the member (Join).
type JoinHandler struct {
	// Etcd is a client of this server's member.
	Etcd *clientv3.Client
	// Tokens checks and uses the token.
	Tokens *jointoken.Store
	// PKIDir holds the shared credentials (SharedFiles).
	PKIDir string
	// EncryptionConfigFile is --encryption-provider-config, if set.
	EncryptionConfigFile string

	// turn, a one-slot semaphore, serialises the joins this server
	// handles; etcd's limit of one learner serialises them across servers.
	turn chan struct{}
}

// NewJoinHandler returns the join handler of the server whose member etcd
// is a client of.
func NewJoinHandler(etcd *clientv3.Client, tokens *jointoken.Store, pkiDir, encryptionConfigFile string) *JoinHandler {
	return &JoinHandler{Etcd: etcd, Tokens: tokens, PKIDir: pkiDir, EncryptionConfigFile: encryptionConfigFile, turn: make(chan struct{}, 1)}
}

func (h *JoinHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeFailure(w, http.StatusMethodNotAllowed, "a join is a POST")
		return
	}
	id, secret, ok := h.tokenOf(r)
	if !ok {
		writeFailure(w, http.StatusForbidden, "only a join token may join; create one with \"sample-generic-controlplane token create\"")
		return
	}
	var req JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		writeFailure(w, http.StatusBadRequest, fmt.Sprintf("the join request is not JSON: %v", err))
		return
	}
	if err := req.Validate(); err != nil {
		writeFailure(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), JoinTimeout)
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("member", req.Name, "peerURL", req.PeerURL, "token", id)
	ctx = klog.NewContext(ctx, logger)

	if dryRun := r.URL.Query()["dryRun"]; len(dryRun) > 0 {
		if len(dryRun) != 1 || dryRun[0] != "All" {
			writeFailure(w, http.StatusBadRequest, fmt.Sprintf("dryRun %q: the only dry run is dryRun=All", dryRun))
			return
		}
		resp, code, err := h.dryRun(ctx, id, secret, req)
		if err != nil {
			logger.V(2).Info("Dry-run join refused", "reason", err.Error())
			writeFailure(w, code, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp) //nolint:errcheck // the joiner retries
		return
	}
	resp, code, err := h.join(ctx, id, secret, req)
	if err != nil {
		logger.Info("Join refused", "reason", err.Error())
		writeFailure(w, code, err.Error())
		return
	}
	logger.Info("Member joined as a learner", "memberID", resp.MemberID)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp) //nolint:errcheck // the joiner retries
}

// RunsAloneHandler answers a join on a server whose member runs alone,
// listening for no peers: it says how to make it take joins.
func RunsAloneHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeFailure(w, http.StatusConflict, "this server's etcd member runs alone and listens for no peers: restart the server with --cluster-init (it keeps its data), then join it")
	})
}

// tokenOf returns the ID and secret of the join token the request was
// authenticated with (WithToken).
func (h *JoinHandler) tokenOf(r *http.Request) (id, secret string, ok bool) {
	user, found := request.UserFrom(r.Context())
	credential, hasToken := r.Context().Value(tokenKey{}).(string)
	if !found || !hasToken {
		return "", "", false
	}
	id, secret, found = strings.Cut(credential, ".")
	if !found || jointoken.UserPrefix+id != user.GetName() {
		return "", "", false
	}
	return id, secret, true
}

type tokenKey struct{}

// WithToken returns a context that carries the join token a request was
// authenticated with, for the JoinHandler to use: the API server's
// authentication filter removes the Authorization header.
func WithToken(ctx context.Context, credential string) context.Context {
	return context.WithValue(ctx, tokenKey{}, credential)
}

// dryRun answers what a join would need, changing nothing: the token is
// checked and not used, the request is checked against the members (a
// member of the same name, or a started one at the same peer URL, refuses
// the join as it would), and no member is added.
func (h *JoinHandler) dryRun(ctx context.Context, id, secret string, req JoinRequest) (*JoinResponse, int, error) {
	if _, err := h.Tokens.Check(ctx, id, secret, jointoken.UsageJoin); err != nil {
		if errors.Is(err, jointoken.ErrInvalid) {
			return nil, http.StatusUnauthorized, err
		}
		return nil, http.StatusInternalServerError, err
	}
	list, err := h.Etcd.MemberList(ctx)
	if err != nil {
		return nil, http.StatusServiceUnavailable, fmt.Errorf("listing the etcd members: %w", err)
	}
	for _, m := range list.Members {
		if code, err := conflict(m, req); err != nil && !unstartedAt(m, req.PeerURL) {
			return nil, code, err
		}
	}
	credentials, encryption, code, err := h.shared()
	if err != nil {
		return nil, code, err
	}
	return &JoinResponse{Credentials: credentials, EncryptionConfig: encryption}, http.StatusOK, nil
}

// shared reads the credentials every server of the cluster shares, and the
// encryption configuration, if any.
func (h *JoinHandler) shared() (map[string][]byte, []byte, int, error) {
	credentials, err := ReadShared(h.PKIDir)
	if err != nil {
		return nil, nil, http.StatusInternalServerError, err
	}
	var encryption []byte
	if h.EncryptionConfigFile != "" {
		if encryption, err = os.ReadFile(h.EncryptionConfigFile); err != nil {
			return nil, nil, http.StatusInternalServerError, fmt.Errorf("reading --encryption-provider-config: %w", err)
		}
	}
	return credentials, encryption, 0, nil
}

func (h *JoinHandler) join(ctx context.Context, id, secret string, req JoinRequest) (*JoinResponse, int, error) {
	credentials, encryption, code, err := h.shared()
	if err != nil {
		return nil, code, err
	}

	waitCtx, cancel := context.WithTimeout(ctx, waitPerRequest)
	defer cancel()
	select {
	case h.turn <- struct{}{}:
		defer func() { <-h.turn }()
	case <-waitCtx.Done():
		return nil, http.StatusServiceUnavailable, errAnotherJoin
	}
	if code, err := h.waitForTurn(waitCtx, req); err != nil {
		return nil, code, err
	}
	added, err := h.addLearner(waitCtx, req.PeerURL)
	if err != nil {
		return nil, http.StatusServiceUnavailable, fmt.Errorf("adding the member to the etcd cluster: %w", err)
	}
	// The token is used once the member is in: a join that failed before
	// leaves it as it was. Whatever fails from here on takes the member
	// out again, so that it holds no learner's place.
	undo := func(code int, err error) (*JoinResponse, int, error) {
		if _, removeErr := h.Etcd.MemberRemove(context.WithoutCancel(ctx), added.Member.ID); removeErr != nil {
			klog.FromContext(ctx).Error(removeErr, "Cannot take out the member of a failed join; the promoter removes it after --etcd-learner-timeout", "memberID", strconv.FormatUint(added.Member.ID, 16))
		}
		return nil, code, err
	}
	if _, err := h.Tokens.Use(ctx, id, secret, jointoken.UsageJoin); err != nil {
		if errors.Is(err, jointoken.ErrInvalid) {
			return undo(http.StatusUnauthorized, err)
		}
		return undo(http.StatusInternalServerError, err)
	}
	initial, err := initialCluster(added, req.Name)
	if err != nil {
		return undo(http.StatusInternalServerError, err)
	}
	return &JoinResponse{
		MemberID:         strconv.FormatUint(added.Member.ID, 16),
		InitialCluster:   initial,
		Credentials:      credentials,
		EncryptionConfig: encryption,
	}, http.StatusOK, nil
}

// waitForTurn waits until no other learner is in the cluster (etcd admits
// one at a time; a second join waits for the first to be promoted), and
// refuses a member whose name or peer URL is taken. A learner that never
// started at the same peer URL is the same server joining again after it
// failed: it is removed.
func (h *JoinHandler) waitForTurn(ctx context.Context, req JoinRequest) (int, error) {
	logger := klog.FromContext(ctx)
	waiting := false
	for {
		list, err := h.Etcd.MemberList(ctx)
		if err != nil {
			return http.StatusServiceUnavailable, fmt.Errorf("listing the etcd members: %w", err)
		}
		otherLearner := false
		for _, m := range list.Members {
			if unstartedAt(m, req.PeerURL) {
				logger.Info("Removing the unstarted learner of an earlier join from the same peer URL", "memberID", strconv.FormatUint(m.ID, 16))
				if _, err := h.Etcd.MemberRemove(ctx, m.ID); err != nil {
					return http.StatusServiceUnavailable, fmt.Errorf("removing the unstarted learner %x of an earlier join at %s: %w", m.ID, req.PeerURL, err)
				}
				continue
			}
			if code, err := conflict(m, req); err != nil {
				return code, err
			}
			if m.IsLearner {
				otherLearner = true
			}
		}
		if !otherLearner {
			return 0, nil
		}
		if !waiting {
			logger.Info("Another member is joining; this join waits for its promotion")
			waiting = true
		}
		select {
		case <-ctx.Done():
			return http.StatusServiceUnavailable, errAnotherJoin
		case <-time.After(learnerWaitPoll):
		}
	}
}

// unstartedAt reports whether m is a learner that never started at
// peerURL: the same server joining again after it failed.
func unstartedAt(m *etcdserverpb.Member, peerURL string) bool {
	return len(m.PeerURLs) == 1 && m.PeerURLs[0] == peerURL && m.IsLearner && m.Name == ""
}

// conflict refuses a join whose peer URL or name is m's.
func conflict(m *etcdserverpb.Member, req JoinRequest) (int, error) {
	switch {
	case slices.Contains(m.PeerURLs, req.PeerURL):
		return http.StatusConflict, fmt.Errorf("member %q has peer URL %s already; remove it first (sample-generic-controlplane cluster remove %s) or join from another address", m.Name, req.PeerURL, m.Name)
	case m.Name == req.Name:
		return http.StatusConflict, fmt.Errorf("a member named %q is in the cluster already; remove it first (sample-generic-controlplane cluster remove %s) or join with a new --data-dir", m.Name, m.Name)
	}
	return 0, nil
}

// errAnotherJoin: the joining server asks again (503).
var errAnotherJoin = errors.New("another member is joining; the cluster admits one at a time (see \"sample-generic-controlplane cluster members\")")

// addLearner adds the member as a learner, waiting while another server's
// join holds etcd's one learner place, while etcd finds the cluster
// unhealthy (it adds members only once every voter has been connected for
// a few seconds, which a member promoted a moment ago has not), while the
// cluster elects a leader, and while etcd would give the member the ID of
// one removed in the same second (it derives IDs from the peer URL and the
// time in seconds, and refuses a removed ID: "member not found").
func (h *JoinHandler) addLearner(ctx context.Context, peerURL string) (*clientv3.MemberAddResponse, error) {
	for {
		resp, err := h.Etcd.MemberAddAsLearner(ctx, []string{peerURL})
		if err == nil {
			return resp, nil
		}
		switch rpctypes.ErrorDesc(err) {
		case rpctypes.ErrorDesc(rpctypes.ErrGRPCTooManyLearners), rpctypes.ErrorDesc(rpctypes.ErrGRPCUnhealthy),
			rpctypes.ErrorDesc(rpctypes.ErrGRPCTimeout), rpctypes.ErrorDesc(rpctypes.ErrGRPCNoLeader), rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaderChanged),
			rpctypes.ErrorDesc(rpctypes.ErrGRPCMemberNotFound):
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(learnerWaitPoll):
		}
	}
}

// initialCluster is etcd's --initial-cluster for the added member: every
// started member by name, and the new one by the name it will start with.
func initialCluster(added *clientv3.MemberAddResponse, name string) (string, error) {
	var entries []string
	for _, m := range added.Members {
		memberName := m.Name
		if m.ID == added.Member.ID {
			memberName = name
		}
		if memberName == "" {
			return "", fmt.Errorf("member %x has not started yet; try again once it has", m.ID)
		}
		for _, u := range m.PeerURLs {
			entries = append(entries, memberName+"="+u)
		}
	}
	return strings.Join(entries, ","), nil
}

// writeFailure answers with a Status, as the API server does.
func writeFailure(w http.ResponseWriter, code int, message string) {
	writeStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    int32(code),
		Reason:  reasonForCode(code),
		Message: message,
	}})
}

// reasonForCode is the StatusReason the API server gives code.
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	default:
		return metav1.StatusReasonInternalError
	}
}
