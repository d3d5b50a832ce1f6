// Package serviceresolver resolves the service references of APIServices,
// admission webhooks and CRD conversion webhooks without Services: a
// ServiceLocation (controlplane.x-k8s.io) says where NAMESPACE/NAME:PORT is
// served, and a reference none locates is resolved by DNS as upstream's
// default resolver does (NAME.NAMESPACE.svc), which still works when the
// control plane runs where cluster DNS answers.
package serviceresolver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/validation"
	listers "sigs.k8s.io/sample-generic-controlplane/client/listers/controlplane/v1alpha1"
)

// Resolver resolves service references. It is the one ServiceResolver of
// the aggregator, the admission webhooks and the CRD conversion webhooks.
type Resolver struct {
	// informer and locations watch and list the ServiceLocations; nil when
	// they are not served, and every reference is resolved by DNS.
	informer  cache.SharedIndexInformer
	locations listers.ServiceLocationLister
	// loopback is the URL of this server, where kubernetes.default:443
	// leads, as in kube-apiserver.
	loopback *url.URL
	dns      webhook.ServiceResolver
}

var _ webhook.ServiceResolver = &Resolver{}

// New returns a resolver reading the ServiceLocations of informer (nil:
// DNS only) that resolves kubernetes.default:443 to loopback, this server.
// The informer is the caller's to start.
func New(informer cache.SharedIndexInformer, loopback *url.URL) *Resolver {
	r := &Resolver{informer: informer, loopback: loopback, dns: webhook.NewDefaultServiceResolver()}
	if informer != nil {
		r.locations = listers.NewServiceLocationLister(informer.GetIndexer())
	}
	return r
}

// Informer is the informer of the ServiceLocations the resolver reads; nil
// when it resolves by DNS only.
func (r *Resolver) Informer() cache.SharedIndexInformer { return r.informer }

// ErrPortNotLocated is the error of a reference whose ServiceLocation does
// not list its port.
var ErrPortNotLocated = errors.New("port not located")

// Location is where a reference leads, and how that was found.
type Location struct {
	URL *url.URL
	// By names the ServiceLocation that located the reference; empty when
	// it is resolved by DNS or to loopback.
	By string
}

// ResolveEndpoint returns the URL of the server of namespace/name:port.
func (r *Resolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	l, err := r.Locate(namespace, name, port)
	if err != nil {
		return nil, err
	}
	return l.URL, nil
}

// Locate says where namespace/name:port leads, and by which ServiceLocation.
func (r *Resolver) Locate(namespace, name string, port int32) (Location, error) {
	if namespace == "default" && name == "kubernetes" && port == 443 && r.loopback != nil {
		u := *r.loopback
		return Location{URL: &u}, nil
	}
	if r.locations != nil && namespace != "" && name != "" {
		locationName := validation.ServiceLocationName(namespace, name)
		l, err := r.locations.Get(locationName)
		switch {
		case err == nil:
			for _, p := range l.Spec.Ports {
				if p.Port == port {
					host := net.JoinHostPort(l.Spec.Address, strconv.Itoa(int(p.TargetPort)))
					return Location{URL: &url.URL{Scheme: "https", Host: host}, By: locationName}, nil
				}
			}
			return Location{By: locationName}, fmt.Errorf("%w: ServiceLocation %s lists no port %d for service %s/%s; add {port: %d, targetPort: PORT} to its spec.ports",
				ErrPortNotLocated, locationName, port, namespace, name, port)
		case !apierrors.IsNotFound(err):
			return Location{}, fmt.Errorf("reading ServiceLocation %s: %w", locationName, err)
		}
	}
	u, err := r.dns.ResolveEndpoint(namespace, name, port)
	if err != nil {
		return Location{}, err
	}
	return Location{URL: u}, nil
}
