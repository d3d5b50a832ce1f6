package controlplane

import (
	"testing"

	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"
)

func TestWithFastRBACBootstrap(t *testing.T) {
	providers, err := withFastRBACBootstrap([]controlplaneapiserver.RESTStorageProvider{groupStorage{}, rbacrest.RESTStorageProvider{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := providers[1].(rbacStorage); !ok {
		t.Errorf("the RBAC provider is %T, want rbacStorage", providers[1])
	}
	if _, err := withFastRBACBootstrap([]controlplaneapiserver.RESTStorageProvider{groupStorage{}}); err == nil {
		t.Error("no RBAC provider: no error")
	}
}

func TestWithCoreStorage(t *testing.T) {
	providers := []controlplaneapiserver.RESTStorageProvider{&corerest.GenericConfig{}, groupStorage{}}
	core, err := withCoreStorage(providers)
	if err != nil {
		t.Fatal(err)
	}
	if providers[0] != core {
		t.Errorf("the core provider is %T, want the coreStorage returned", providers[0])
	}
	if _, err := withCoreStorage([]controlplaneapiserver.RESTStorageProvider{groupStorage{}}); err == nil {
		t.Error("no core provider: no error")
	}
}
