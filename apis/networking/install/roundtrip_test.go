package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Every field of NetworkClaim survives internal → v1alpha1 → JSON/protobuf
// → internal with random values.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, func(serializer.CodecFactory) []interface{} { return nil })
}
