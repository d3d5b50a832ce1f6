package controlplane

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/component-base/featuregate"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
)

// This file holds the extension points: what a program adds, in code, to
// the generic control plane before it parses flags. Our binary adds the
// NetworkClaim registry (package kana) through these and nothing else.

// APIGroup is an API group served natively beside the generic ones, the
// way upstream's built-in groups are: its types in the server's scheme,
// storage in etcd, OpenAPI, and discovery.
type APIGroup struct {
	// Name is the group, e.g. "networking.x-k8s.io".
	Name string
	// Versions are the versions served by default, most preferred first.
	Versions []APIGroupVersion
	// Priority orders the group in discovery: groups with a higher
	// priority come first. Upstream's groups take 16000 to 21000; 15000
	// puts a group after them and before custom resources.
	Priority int32
	// Resources are the group's resources (not subresources), e.g.
	// "networkclaims": without Protobuf they are stored as JSON.
	Resources []string
	// AddToScheme adds the internal and versioned types, conversions and
	// defaults to the server's scheme. It runs once per process, the first
	// time a server serving the group is configured.
	AddToScheme func(*runtime.Scheme) error
	// OpenAPIDefinitions of the versioned types.
	OpenAPIDefinitions openapicommon.GetOpenAPIDefinitions
	// NewStorage returns the REST storage of each version's resources and
	// subresources ("networkclaims", "networkclaims/status"), built from
	// scheme and optsGetter. Only the versions and resources the server
	// serves (defaults, --runtime-config, FeatureGate) are installed.
	NewStorage func(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error)
	// Protobuf is true when the versioned types have a protobuf encoding
	// (go-to-protobuf's generated.pb.go, as k8s.io/api's types have): the
	// group is then served in protobuf besides JSON and YAML, and stored in
	// the server's storage media type (--storage-media-type, protobuf by
	// default), as built-in groups are. Without one, clients
	// that prefer protobuf (the controllers, the loopback client) are
	// answered in JSON, as for custom resources, and objects are stored as
	// JSON. Either way the server reads objects stored in any of these
	// encodings, so a group can turn Protobuf on with JSON data in etcd.
	Protobuf bool
	// FeatureGate, if set, turns the whole group off when false: then not
	// even --runtime-config serves it (it refuses to, naming the gate).
	FeatureGate featuregate.Feature
}

// APIGroupVersion is one served version of an APIGroup.
type APIGroupVersion struct {
	// Version, e.g. "v1alpha1".
	Version string
	// Priority orders the versions of the group in discovery: higher first.
	Priority int32
}

// groupVersions are the group's versions.
func (g APIGroup) groupVersions() []schema.GroupVersion {
	var gvs []schema.GroupVersion
	for _, v := range g.Versions {
		gvs = append(gvs, schema.GroupVersion{Group: g.Name, Version: v.Version})
	}
	return gvs
}

func (g APIGroup) validate() error {
	switch {
	case g.Name == "":
		return errors.New("an API group needs a Name")
	case len(g.Versions) == 0:
		return fmt.Errorf("API group %s: Versions is empty; list the versions to serve", g.Name)
	case g.AddToScheme == nil || g.NewStorage == nil || g.OpenAPIDefinitions == nil:
		return fmt.Errorf("API group %s: AddToScheme, NewStorage and OpenAPIDefinitions are all needed", g.Name)
	}
	return nil
}

// AdmissionPlugin is an admission plugin compiled into the control plane,
// like upstream's built-in ones: --enable-admission-plugins and
// --disable-admission-plugins know it by Name.
type AdmissionPlugin struct {
	Name string
	// New builds the plugin. The server initializes it as it does
	// upstream's: a plugin that implements an interface of
	// k8s.io/apiserver/pkg/admission/initializer gets what it asks for
	// (WantsUnconditionalAuthorizer or WantsAuthorizer: the server's
	// authorizer, RBAC included; WantsExternalKubeClientSet,
	// WantsExternalKubeInformerFactory, WantsFeatures, ...), and one that
	// implements admission.InitializationValidator is validated then, so
	// a plugin left without what it needs fails the start.
	New admission.Factory
	// DefaultOff leaves the plugin off unless --enable-admission-plugins names it.
	DefaultOff bool
	// Before is the plugin it runs before. Empty: before
	// ValidatingAdmissionPolicy, with upstream's built-in plugins, so that
	// users' policies and webhooks never see a request it refuses.
	Before string
}

// AddAPIGroup serves an API group natively. Its types join the process's
// scheme now, once per process, as a built-in group's install package adds
// them at init: --runtime-config is checked against the groups the scheme
// knows.
func (o *Options) AddAPIGroup(g APIGroup) error {
	if err := g.validate(); err != nil {
		return err
	}
	if slices.ContainsFunc(o.apiGroups, func(other APIGroup) bool { return other.Name == g.Name }) {
		return fmt.Errorf("API group %s is added already", g.Name)
	}
	if err := installIntoScheme(g); err != nil {
		return err
	}
	o.apiGroups = append(o.apiGroups, g)
	return nil
}

// AddBootstrap writes objects at every start.
func (o *Options) AddBootstrap(b bootstrap.Bootstrap) error {
	if b.Name == "" {
		return errors.New("a bootstrap needs a Name: it names its post-start hook")
	}
	if slices.ContainsFunc(o.bootstraps, func(other bootstrap.Bootstrap) bool { return other.Name == b.Name }) {
		return fmt.Errorf("bootstrap %s is added already", b.Name)
	}
	o.bootstraps = append(o.bootstraps, b)
	return nil
}

// AddAdmissionPlugin compiles an admission plugin in. Add it before
// AddFlags, whose help lists the plugins.
func (o *Options) AddAdmissionPlugin(p AdmissionPlugin) error {
	admissionOptions := o.ControlPlane.Admission.GenericAdmission
	if p.Name == "" || p.New == nil {
		return errors.New("an admission plugin needs a Name and New")
	}
	if slices.Contains(admissionOptions.Plugins.Registered(), p.Name) {
		return fmt.Errorf("admission plugin %s is registered already", p.Name)
	}
	before := p.Before
	if before == "" {
		before = validatingadmissionpolicy.PluginName
	}
	// Upstream's order is a package-level slice: insert into a copy.
	order := slices.Clone(admissionOptions.RecommendedPluginOrder)
	at := slices.Index(order, before)
	if at < 0 {
		return fmt.Errorf("admission plugin %s: Before names %q, which is not among the plugins: %v", p.Name, before, order)
	}
	admissionOptions.Plugins.Register(p.Name, p.New)
	admissionOptions.RecommendedPluginOrder = slices.Insert(order, at, p.Name)
	if p.DefaultOff {
		admissionOptions.DefaultOffPlugins = admissionOptions.DefaultOffPlugins.Clone().Insert(p.Name)
	}
	return nil
}
