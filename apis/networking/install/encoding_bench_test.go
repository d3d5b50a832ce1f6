package install

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// BenchmarkNetworkClaimList encodes and decodes a list of 10,000 decided
// claims (three pool records each, as in docs/networkclaim.md's
// "Scalability") in JSON and in protobuf, as a client's list does:
//
//	cd apis && go test -run '^$' -bench NetworkClaimList -benchmem ./networking/install
func BenchmarkNetworkClaimList(b *testing.B) {
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	list := &v1alpha1.NetworkClaimList{}
	date := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	for i := range 10000 {
		c := v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("node-%05d", i), UID: "6f1c1a52-0000-4000-8000-000000000001",
			ResourceVersion: "123456", Generation: 1, CreationTimestamp: date,
		}}
		for j, name := range []string{"pods-v4", "pods-v6", "services"} {
			length := int32(24)
			c.Spec.AddressSpace = append(c.Spec.AddressSpace, v1alpha1.AddressSpaceRecord{
				Name: name, PrefixLength: &length, From: &v1alpha1.PrefixSource{Claim: "org-pods"},
				Reference:   &v1alpha1.ResourceReference{Resource: "pods"},
				Description: "the node's pod range, taken from the organisation's pool",
			})
			prefix := fmt.Sprintf("10.%d.%d.0/24", j, i%256)
			c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{
				Name: name, Prefix: prefix, Status: v1alpha1.AllocationAllocated, Date: date,
				Reason: "Allocated", FirstSeenResourceVersion: "123456",
			})
		}
		c.Status.ObservedGeneration = 1
		c.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Allocated", LastTransitionTime: date, ObservedGeneration: 1}}
		list.Items = append(list.Items, c)
	}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		encoder := codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
		decoder := codecs.DecoderToVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
		data, err := runtime.Encode(encoder, list)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+mediaType, func(b *testing.B) {
			for b.Loop() {
				if _, err := runtime.Encode(encoder, list); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/list")
		})
		b.Run("decode/"+mediaType, func(b *testing.B) {
			for b.Loop() {
				if _, err := runtime.Decode(decoder, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
