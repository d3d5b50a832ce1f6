package controlplane

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	resourcequota "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// A control plane may serve fewer generic resources than the binary does
// (Options.Resources), but the API server itself watches some of them: an
// informer of a resource that is not served never syncs, and the server
// then answers every request "not yet ready to handle request" until its
// post-start hooks time out. So: admission plugins that watch a resource
// the program chose not to serve are off by default, and a start that
// would hang fails at once, saying what to serve or turn off.

var core = corev1.SchemeGroupVersion

// serverNeeds are the resources the API server watches whatever it is
// configured with: namespaces (its system namespaces, NamespaceLifecycle),
// service accounts and secrets (it authenticates service-account tokens),
// config maps (it publishes its client CAs in kube-system).
var serverNeeds = []schema.GroupVersionResource{
	core.WithResource("namespaces"), core.WithResource("serviceaccounts"),
	core.WithResource("secrets"), core.WithResource("configmaps"),
}

// admissionNeeds are the resources upstream's admission plugins watch.
var admissionNeeds = map[string][]schema.GroupVersionResource{
	resourcequota.PluginName: {core.WithResource("resourcequotas")},
	validatingadmissionpolicy.PluginName: {
		admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"),
		admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"),
	},
	mutatingadmissionpolicy.PluginName: {
		admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"),
		admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"),
	},
	validatingwebhook.PluginName: {admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")},
	mutatingwebhook.PluginName:   {admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")},
}

// unserved returns the resources of needs that resources does not serve.
func unserved(resources serverstorage.APIResourceConfigSource, needs []schema.GroupVersionResource) []string {
	var missing []string
	for _, r := range needs {
		if !resources.ResourceEnabled(r) {
			missing = append(missing, r.Resource+"."+r.GroupVersion().String())
		}
	}
	return missing
}

// withoutAdmissionOfUnserved returns a copy of admission in which the
// plugins that watch a resource the default resources leave out are off by
// default: --enable-admission-plugins can still turn them on, with the
// resources served through --runtime-config.
func withoutAdmissionOfUnserved(admission *kubeoptions.AdmissionOptions, resources serverstorage.APIResourceConfigSource) *kubeoptions.AdmissionOptions {
	out, generic := *admission, *admission.GenericAdmission
	generic.DefaultOffPlugins = generic.DefaultOffPlugins.Clone()
	for plugin, needs := range admissionNeeds {
		if len(unserved(resources, needs)) > 0 {
			generic.DefaultOffPlugins.Insert(plugin)
		}
	}
	out.GenericAdmission = &generic
	return &out
}

// enabledAdmissionPlugins are the plugins admission will run, as upstream
// computes them from the recommended order and the flags.
func enabledAdmissionPlugins(a *genericoptions.AdmissionOptions) []string {
	off := sets.New(a.DisablePlugins...).Union(a.DefaultOffPlugins).Difference(sets.New(a.EnablePlugins...))
	return slices.DeleteFunc(slices.Clone(a.RecommendedPluginOrder), off.Has)
}

// checkServed fails when the API server would watch a resource it does
// not serve, naming the resource and what to change.
func checkServed(resources serverstorage.APIResourceConfigSource, admission *genericoptions.AdmissionOptions) error {
	var problems []string
	if missing := unserved(resources, serverNeeds); len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("the API server itself needs %s; serve them (Options.Resources, or --runtime-config=api/v1/<resource>=true)", strings.Join(missing, ", ")))
	}
	for _, plugin := range enabledAdmissionPlugins(admission) {
		if missing := unserved(resources, admissionNeeds[plugin]); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("admission plugin %s needs %s; serve them or add --disable-admission-plugins=%s", plugin, strings.Join(missing, ", "), plugin))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the served resources: %s", strings.Join(problems, "; "))
	}
	return nil
}
