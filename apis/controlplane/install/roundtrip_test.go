package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Every field of ServiceLocation survives internal → v1alpha1 → JSON or
// protobuf (what the API server stores by default) → v1alpha1 → internal,
// and v1alpha1 → JSON or protobuf → v1alpha1, with random values: a field
// that go-to-protobuf left out of generated.proto, or a tag naming the
// wrong field, fails here.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, func(serializer.CodecFactory) []interface{} { return nil })
}
