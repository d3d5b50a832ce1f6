package controlplane

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/install"
)

// KANA turns the NetworkClaim registry on: the networking.x-k8s.io API and
// its controllers. Alpha, and on by default in this binary.
const KANA featuregate.Feature = "KANA"

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		KANA: {{Version: utilversion.MustParse("1.36"), Default: true, PreRelease: featuregate.Alpha}},
	}))
	// The generic apiserver encodes, decodes and stores through this scheme,
	// as it does every built-in group.
	install.Install(legacyscheme.Scheme)
}
