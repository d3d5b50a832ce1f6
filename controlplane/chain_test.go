package controlplane

import (
	"testing"

	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"
)

func TestWithFastRBACBootstrap(t *testing.T) {
	providers, err := withFastRBACBootstrap([]controlplaneapiserver.RESTStorageProvider{networkingStorage{}, rbacrest.RESTStorageProvider{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := providers[1].(rbacStorage); !ok {
		t.Errorf("the RBAC provider is %T, want rbacStorage", providers[1])
	}
	if _, err := withFastRBACBootstrap([]controlplaneapiserver.RESTStorageProvider{networkingStorage{}}); err == nil {
		t.Error("no RBAC provider: no error")
	}
}
