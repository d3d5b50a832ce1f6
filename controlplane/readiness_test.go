package controlplane

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
)

func TestReadyzAnswers(t *testing.T) {
	ok := healthz.NamedCheck("ok", func(*http.Request) error { return nil })
	failing := healthz.NamedCheck("hook-not-finished", func(*http.Request) error { return errors.New("not finished") })
	// readsContext fails when the request carries no context of the caller.
	readsContext := healthz.NamedCheck("reads-context", func(r *http.Request) error {
		if r.Context().Value(callerKey{}) == nil {
			return errors.New("request without the caller's context")
		}
		return nil
	})
	for _, tc := range []struct {
		name    string
		install func(m *mux.PathRecorderMux)
		want    bool
	}{
		{"every check passes", func(m *mux.PathRecorderMux) { healthz.InstallReadyzHandler(m, ok, readsContext) }, true},
		{"a check fails", func(m *mux.PathRecorderMux) { healthz.InstallReadyzHandler(m, ok, failing) }, false},
		{"no /readyz", func(m *mux.PathRecorderMux) { healthz.InstallLivezHandler(m, ok) }, false},
		{"a body without a status", func(m *mux.PathRecorderMux) {
			m.HandleFunc(readyzPath, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }) //nolint:errcheck
		}, true},
		{"a status after the body does not count", func(m *mux.PathRecorderMux) {
			m.HandleFunc(readyzPath, func(w http.ResponseWriter, _ *http.Request) {
				w.Write([]byte("ok")) //nolint:errcheck
				w.WriteHeader(http.StatusInternalServerError)
			})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mux.NewPathRecorderMux("test")
			tc.install(m)
			ctx := context.WithValue(t.Context(), callerKey{}, true)
			if got := readyzAnswers(ctx, m); got != tc.want {
				t.Errorf("readyzAnswers = %v, want %v", got, tc.want)
			}
		})
	}
}

type callerKey struct{}
