// Package kana is the NetworkClaim registry of the "Kubernetes Assigned
// Numbers Authority" proposal, as a plug-in of the generic control plane:
// the networking.x-k8s.io API group, the admission plugins that guard the
// well-known claims and the use of pools, the RBAC that comes with the API, the allocation
// controller and the KANA feature gate. Install adds them through the
// public extension points of package controlplane, as any distribution
// adds its own; the generic layer knows nothing of them.
package kana

import (
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	networkingopenapi "sigs.k8s.io/sample-generic-controlplane/apis/generated/openapi"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/install"
	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/kana/admission/pooluse"
	"sigs.k8s.io/sample-generic-controlplane/kana/admission/wellknownclaims"
	"sigs.k8s.io/sample-generic-controlplane/kana/registry/networkclaim"
)

// Install adds the NetworkClaim registry to a control plane's options.
// Call it before AddFlags: the flags' help lists its admission plugin and
// controller. With the KANA gate off, none of it is served or run.
func Install(o *controlplane.Options) error {
	errs := []error{
		o.AddAPIGroup(APIGroup()),
		o.AddAdmissionPlugin(controlplane.AdmissionPlugin{
			Name: wellknownclaims.PluginName,
			New:  func(io.Reader) (admission.Interface, error) { return wellknownclaims.New(), nil },
		}),
		o.AddAdmissionPlugin(controlplane.AdmissionPlugin{
			Name: pooluse.PluginName,
			New:  func(io.Reader) (admission.Interface, error) { return pooluse.New(), nil },
		}),
		o.AddBootstrap(policy()),
	}
	if o.Controllers != nil {
		errs = append(errs, o.Controllers.AddControllers(Controllers()...))
	}
	return errors.Join(errs...)
}

// APIGroup is networking.x-k8s.io: NetworkClaims and their status.
func APIGroup() controlplane.APIGroup {
	return controlplane.APIGroup{
		Name:     networking.GroupName,
		Versions: []controlplane.APIGroupVersion{{Version: networkingv1alpha1.SchemeGroupVersion.Version, Priority: 9}},
		// After every built-in group, before custom resources.
		Priority:  15000,
		Resources: []string{"networkclaims"},
		AddToScheme: func(scheme *runtime.Scheme) error {
			install.Install(scheme)
			return nil
		},
		OpenAPIDefinitions: networkingopenapi.GetOpenAPIDefinitions,
		NewStorage: func(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error) {
			claims, status, err := networkclaim.NewREST(scheme, optsGetter)
			if err != nil {
				return nil, err
			}
			return map[string]map[string]rest.Storage{
				networkingv1alpha1.SchemeGroupVersion.Version: {"networkclaims": claims, "networkclaims/status": status},
			}, nil
		},
		// Served and stored as protobuf, as built-in groups are
		// (generated.pb.go); JSON is still read and served.
		Protobuf:    true,
		FeatureGate: KANA,
	}
}

// Controllers are the registry's controllers: the allocation controller,
// run only with the KANA gate on. The controllers command adds them to its
// manager as Install does to the control plane's.
func Controllers() []controller.Descriptor {
	d := allocation.Descriptor()
	d.RequiredFeatureGates = append(d.RequiredFeatureGates, KANA)
	return []controller.Descriptor{d}
}
