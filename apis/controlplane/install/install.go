// Package install registers the controlplane.x-k8s.io group in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
)

// Install registers the internal and every served version, v1alpha1 preferred.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(controlplane.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
