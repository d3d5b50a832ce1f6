package v1

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	shopv1 "example.com/kubebuilder-project/api/v1"
	shopv2 "example.com/kubebuilder-project/api/v2"
)

var _ = Describe("Gadget Webhook", func() {
	Context("When creating a Gadget through the API server", func() {
		It("defaults its color at the first request", func() {
			gadget := &shopv1.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: "default"}, Spec: shopv1.GadgetSpec{Size: 1}}
			Expect(k8sClient.Create(ctx, gadget)).To(Succeed())
			Expect(gadget.Spec.Color).To(Equal("blue"))
		})

		It("refuses a size over 10", func() {
			gadget := &shopv1.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"}, Spec: shopv1.GadgetSpec{Size: 11}}
			err := k8sClient.Create(ctx, gadget)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("spec.size: 11 is over 10"))
		})
	})

	Context("When reading a Gadget in another version", func() {
		It("converts it through the conversion webhook", func() {
			v2 := &shopv2.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "converted", Namespace: "default"}, Spec: shopv2.GadgetSpec{Size: 2, Colors: []string{"red", "green"}}}
			Expect(k8sClient.Create(ctx, v2)).To(Succeed())

			v1 := &shopv1.Gadget{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "converted"}, v1)).To(Succeed())
			Expect(v1.Spec.Color).To(Equal("red"))
			Expect(v1.Spec.Size).To(Equal(int32(2)))
		})
	})
})
