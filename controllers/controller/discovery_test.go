package controller

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDiscoveryAfterFirstSuccess(t *testing.T) {
	lists := []*metav1.APIResourceList{{GroupVersion: "v1"}}
	calls := 0
	discover := func() ([]*metav1.APIResourceList, error) {
		calls++
		if calls < 3 { // the server is not answering yet
			return nil, errors.New("connection refused")
		}
		return lists, nil
	}
	fn, err := DiscoveryAfterFirstSuccess(t.Context(), discover)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("discovery called %d times before success, want 3", calls)
	}
	// The controller's first call, which would exit the process on an
	// empty answer, gets the result already obtained.
	if got, err := fn(); err != nil || len(got) != 1 || calls != 3 {
		t.Fatalf("first call: %v, %v after %d calls", got, err, calls)
	}
	if _, err := fn(); err != nil || calls != 4 {
		t.Fatalf("later calls must discover again: %v after %d calls", err, calls)
	}
}

func TestDiscoveryAfterFirstSuccessStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := DiscoveryAfterFirstSuccess(ctx, func() ([]*metav1.APIResourceList, error) { return nil, errors.New("down") })
	if err == nil {
		t.Fatal("want an error once the context is done, so the controller is never built")
	}
}
