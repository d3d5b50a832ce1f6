package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Every field of ServiceLocation survives internal → v1alpha1 → JSON →
// internal with random values. JSON only: our types have no protobuf
// encoding, and are stored as JSON.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, func(serializer.CodecFactory) []interface{} { return nil })
}
