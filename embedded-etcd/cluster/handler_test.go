package cluster

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.reportAll(ctx)
	leader, follower := c.leader(ctx), c.follower(ctx)
	h := follower.members.Handler()

	t.Run("list", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, MembersPath, nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s, want 200 JSON: %s", MembersPath, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		var got []MemberStatus
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Name != "member-0" || !got[0].Healthy {
			t.Errorf("GET %s = %+v, want the three members", MembersPath, got)
		}
	})

	cases := []struct {
		name, method, path string
		wantCode           int
		wantReason         metav1.StatusReason
		wantMessage        string
		// wantLeaderURL is the cause a NotLeader answer carries.
		wantLeaderURL string
	}{
		{name: "unknown member", method: http.MethodDelete, path: MembersPath + "/member-9", wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound,
			wantMessage: `member "member-9": no such member; write one of the members' names (member-0, member-1, member-2)`},
		{name: "the leader from a follower", method: http.MethodDelete, path: MembersPath + "/" + leader.name + "?force=true", wantCode: http.StatusMisdirectedRequest,
			wantReason: StatusReasonNotLeader, wantMessage: "member " + leader.name + " is the etcd leader", wantLeaderURL: apiServerURL(leader.name)},
		{name: "bad force", method: http.MethodDelete, path: MembersPath + "/member-0?force=yes please", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest,
			wantMessage: `force="yes please": write force=true, or leave it out`},
		{name: "POST the list", method: http.MethodPost, path: MembersPath, wantCode: http.StatusMethodNotAllowed, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "GET a member", method: http.MethodGet, path: MembersPath + "/member-0", wantCode: http.StatusMethodNotAllowed, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "below a member", method: http.MethodDelete, path: MembersPath + "/member-0/x", wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(ctx, tc.method, "http://x"+strings.ReplaceAll(tc.path, " ", "%20"), nil)
			h.ServeHTTP(rec, req)
			var status metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
				t.Fatalf("%s %s: %v: %s", tc.method, tc.path, err, rec.Body)
			}
			if rec.Code != tc.wantCode || status.Code != int32(tc.wantCode) || status.Reason != tc.wantReason || status.Kind != "Status" || status.APIVersion != "v1" {
				t.Fatalf("%s %s: %d %+v, want %d %s", tc.method, tc.path, rec.Code, status, tc.wantCode, tc.wantReason)
			}
			if !strings.Contains(status.Message, tc.wantMessage) {
				t.Errorf("message %q, want %q", status.Message, tc.wantMessage)
			}
			if tc.wantLeaderURL != "" {
				if d := status.Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Type != CauseTypeLeaderAPIServerURL || d.Causes[0].Message != tc.wantLeaderURL {
					t.Errorf("details %+v, want the cause %s: %s", status.Details, CauseTypeLeaderAPIServerURL, tc.wantLeaderURL)
				}
			}
		})
	}
}
