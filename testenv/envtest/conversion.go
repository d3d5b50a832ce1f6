package envtest

import (
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// conversionPath is where controller-runtime's webhook server serves
// conversion reviews.
const conversionPath = "/convert"

// setConversion sets the conversion of crds as envtest does
// (modifyConversionWebhooks): a CRD whose GroupKind the scheme holds as
// convertible converts by webhook, at /convert of the suite's webhook
// server (install.PatchConversion points it there, with its CA); any other
// loses the conversion its manifest says (controller-gen writes a webhook
// for every CRD of a project with one, which no server would answer).
// ignoreScheme gives every CRD the webhook, whatever the scheme says. CRDs
// that preserve unknown fields are left as they are.
func setConversion(crds []*apiextensionsv1.CustomResourceDefinition, scheme *runtime.Scheme, ignoreScheme bool) {
	convertible := convertibleKinds(scheme)
	for _, crd := range crds {
		if crd.Spec.PreserveUnknownFields {
			continue
		}
		if !ignoreScheme && !convertible[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] {
			crd.Spec.Conversion = nil
			continue
		}
		if crd.Spec.Conversion == nil {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{}
		}
		crd.Spec.Conversion.Strategy = apiextensionsv1.WebhookConverter
		crd.Spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1", "v1beta1"},
			// A path for install.PatchConversion to keep; the service
			// is replaced with the local server's URL.
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: "system", Name: "webhook-service", Path: ptr.To(conversionPath)}},
		}
	}
}

// convertibleKinds are the GroupKinds of scheme that controller-runtime
// converts (conversion.IsConvertible): several versions, one of them the
// hub (a method Hub()), every other a spoke (ConvertTo and ConvertFrom of
// a hub). The methods are looked for by their shape, for this package
// does not import controller-runtime.
func convertibleKinds(scheme *runtime.Scheme) map[schema.GroupKind]bool {
	versions := map[schema.GroupKind][]reflect.Type{}
	for gvk, t := range scheme.AllKnownTypes() {
		versions[gvk.GroupKind()] = append(versions[gvk.GroupKind()], reflect.PointerTo(t))
	}
	convertible := map[schema.GroupKind]bool{}
	for gk, types := range versions {
		if len(types) < 2 {
			continue
		}
		var hubs, spokes, others int
		for _, t := range types {
			switch {
			case isHub(t):
				hubs++
			case isSpoke(t):
				spokes++
			default:
				others++
			}
		}
		switch {
		case hubs == 0 && spokes == 0:
			// Several versions and no conversion code: built-in types.
		case hubs == 1 && others == 0:
			convertible[gk] = true
		default:
			// envtest leaves such a kind without a webhook, silently;
			// its CRD then serves every version without conversion.
			klog.Background().WithName("testenv").Info("Not converting by webhook: controller-runtime converts a kind with exactly one hub version (a method Hub()) and every other version convertible (ConvertTo and ConvertFrom of the hub)",
				"groupKind", gk, "hubs", hubs, "convertible", spokes, "neither", others)
		}
	}
	return convertible
}

var errorType = reflect.TypeFor[error]()

// isHub: t has Hub(), as conversion.Hub says.
func isHub(t reflect.Type) bool {
	m, ok := t.MethodByName("Hub")
	return ok && m.Type.NumIn() == 1 && m.Type.NumOut() == 0
}

// isSpoke: t has ConvertTo(hub) error and ConvertFrom(hub) error, where
// hub is an interface with Hub(), as conversion.Convertible says.
func isSpoke(t reflect.Type) bool {
	for _, name := range []string{"ConvertTo", "ConvertFrom"} {
		m, ok := t.MethodByName(name)
		if !ok || m.Type.NumIn() != 2 || m.Type.NumOut() != 1 || m.Type.Out(0) != errorType {
			return false
		}
		hub := m.Type.In(1)
		if hub.Kind() != reflect.Interface {
			return false
		}
		if _, ok := hub.MethodByName("Hub"); !ok {
			return false
		}
	}
	return true
}
