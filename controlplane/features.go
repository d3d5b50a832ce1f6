package controlplane

import (
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/install"
)

func init() {
	// The generic apiserver encodes, decodes and stores through this scheme,
	// as it does every built-in group.
	install.Install(legacyscheme.Scheme)
}
