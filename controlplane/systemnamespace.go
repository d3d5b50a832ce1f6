package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	api "k8s.io/kubernetes/pkg/apis/core"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
)

// coreStorage is upstream's storage provider of the core ("") group that
// keeps hold of the namespaces storage it creates, so that the control
// plane can create kube-system before it serves.
//
// Upstream's post-start hooks all start together once the server serves.
// Some write to kube-system (the API server's identity Lease, the legacy
// token tracking ConfigMap) while another (the system namespaces
// controller) creates it; on a fresh etcd the writers lose the race, log
// an error and retry. With kube-system created first, there is no race.
type coreStorage struct {
	*corerest.GenericConfig
	namespaces interface {
		rest.Creater
		rest.Getter
	}
}

// NewRESTStorage creates upstream's storage and keeps its namespaces storage.
func (c *coreStorage) NewRESTStorage(resources serverstorage.APIResourceConfigSource, options generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := c.GenericConfig.NewRESTStorage(resources, options)
	if err != nil {
		return info, err
	}
	// Absent when namespaces are not served (--runtime-config).
	c.namespaces, _ = info.VersionedResourcesStorageMap[corev1.SchemeGroupVersion.Version]["namespaces"].(interface {
		rest.Creater
		rest.Getter
	})
	return info, nil
}

// ensureSystemNamespace creates kube-system unless it exists, through the
// registry, before the server serves: as the API's create handler does, it
// fills in the system fields and says what the request is (a create of a
// namespace through v1, which declarative validation reads), and the
// registry's strategy does the rest. Admission is not involved:
// nothing can be registered with it yet on a fresh etcd, and on an
// existing one the namespace exists. It looks first: a create is a write,
// which etcd refuses, even of a namespace that exists, while its
// database is full, and the server must start then to serve reads.
func (c *coreStorage) ensureSystemNamespace(ctx context.Context) error {
	if c.namespaces == nil {
		return nil
	}
	ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceNone)
	if _, err := c.namespaces.Get(ctx, metav1.NamespaceSystem, &metav1.GetOptions{}); err == nil {
		return nil
	}
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}
	rest.FillObjectMetaSystemFields(ns)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true,
		Verb:              "create",
		APIPrefix:         "api",
		APIVersion:        corev1.SchemeGroupVersion.Version,
		Resource:          "namespaces",
		Name:              ns.Name,
	})
	_, err := c.namespaces.Create(ctx, ns, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", metav1.NamespaceSystem, err)
	}
	return nil
}
