package kana

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// KANA turns the NetworkClaim registry on: the networking.x-k8s.io API, its
// admission guard and policy, and its allocation controller. Registered in
// the process-wide gate of k8s.io/apiserver when this package is imported,
// as k8s.io/kubernetes/pkg/features registers upstream's. Beta, so on by default: in Kubernetes' scheme
// an alpha gate is off by default (k8s.io/kubernetes/pkg/features tests
// that), and the compatibility registry warns at every start about an
// alpha gate that is on. The API itself is still v1alpha1.
const KANA featuregate.Feature = "KANA"

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		KANA: {{Version: utilversion.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta}},
	}))
}
