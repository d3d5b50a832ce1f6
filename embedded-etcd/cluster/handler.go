package cluster

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// membersResource names members in the API's errors.
var membersResource = schema.GroupResource{Resource: "members"}

// Handler serves MembersPath: GET MembersPath answers the members as a JSON
// array of MemberStatus; DELETE MembersPath/NAME[?force=true] removes one.
// Errors are a metav1.Status: 404 for an unknown member, 409 for a removal
// refused to keep the quorum, 421 (reason StatusReasonNotLeader, with the
// leader's API server as a cause) for a removal of the leader sent to
// another member's server.
func (m *Members) Handler() http.Handler {
	return http.HandlerFunc(m.serveHTTP)
}

func (m *Members) serveHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, MembersPath)
	name = strings.TrimPrefix(name, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
	case name == "" && r.Method == http.MethodGet:
		m.serveList(w, r)
	case name != "" && r.Method == http.MethodDelete:
		m.serveRemove(w, r, name)
	case name == "":
		w.Header().Set("Allow", http.MethodGet)
		writeStatus(w, apierrors.NewMethodNotSupported(membersResource, r.Method))
	default:
		w.Header().Set("Allow", http.MethodDelete)
		writeStatus(w, apierrors.NewMethodNotSupported(membersResource, r.Method))
	}
}

func (m *Members) serveList(w http.ResponseWriter, r *http.Request) {
	members, err := m.List(r.Context())
	if err != nil {
		writeStatus(w, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	responsewriters.WriteRawJSON(http.StatusOK, members, w)
}

func (m *Members) serveRemove(w http.ResponseWriter, r *http.Request, name string) {
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		var err error
		if force, err = strconv.ParseBool(v); err != nil {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("force=%q: write force=true, or leave it out", v)))
			return
		}
	}
	if err := m.Remove(r.Context(), name, force); err != nil {
		writeStatus(w, removeStatus(name, err))
		return
	}
	responsewriters.WriteRawJSON(http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Message:  fmt.Sprintf("member %s removed", name),
		Details:  &metav1.StatusDetails{Name: name, Kind: membersResource.Resource},
	}, w)
}

// removeStatus is the API's answer to a failed removal.
func removeStatus(name string, err error) *apierrors.StatusError {
	var notLeader *NotLeaderError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &notLeader):
		status = &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusMisdirectedRequest,
			Reason: StatusReasonNotLeader,
			Details: &metav1.StatusDetails{Name: name, Kind: membersResource.Resource, Causes: []metav1.StatusCause{
				{Type: CauseTypeLeaderAPIServerURL, Message: notLeader.LeaderAPIServerURL},
			}},
		}}
	case errors.Is(err, ErrMemberNotFound):
		status = apierrors.NewNotFound(membersResource, name)
	case errors.Is(err, ErrQuorum):
		status = apierrors.NewConflict(membersResource, name, err)
	default:
		status = apierrors.NewInternalError(err)
	}
	// Our message says what to do; upstream's constructors' do not.
	status.ErrStatus.Message = err.Error()
	return status
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	responsewriters.WriteRawJSON(int(status.Code), &status, w)
}
