package controller

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	shopv1 "example.com/kubebuilder-project/api/v1"
)

var _ = Describe("Gadget Controller", func() {
	Context("When reconciling a resource", func() {
		const resourceName = "test-resource"

		ctx := context.Background()

		typeNamespacedName := types.NamespacedName{
			Name:      resourceName,
			Namespace: "default",
		}
		gadget := &shopv1.Gadget{}

		BeforeEach(func() {
			By("creating the custom resource for the Kind Gadget")
			err := k8sClient.Get(ctx, typeNamespacedName, gadget)
			if err != nil && errors.IsNotFound(err) {
				resource := &shopv1.Gadget{
					ObjectMeta: metav1.ObjectMeta{
						Name:      resourceName,
						Namespace: "default",
					},
					Spec: shopv1.GadgetSpec{Size: 3, Color: "green"},
				}
				Expect(k8sClient.Create(ctx, resource)).To(Succeed())
			}
		})

		It("should successfully reconcile the resource", func() {
			By("Reconciling the created resource")
			controllerReconciler := &GadgetReconciler{
				Client: k8sClient,
				Scheme: k8sClient.Scheme(),
			}

			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{
				NamespacedName: typeNamespacedName,
			})
			Expect(err).NotTo(HaveOccurred())

			config := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: resourceName + "-gadget"}, config)).To(Succeed())
			Expect(config.Data).To(HaveKeyWithValue("color", "green"))
			Expect(k8sClient.Get(ctx, typeNamespacedName, gadget)).To(Succeed())
			Expect(gadget.Status.ConfigMap).To(Equal(resourceName + "-gadget"))
		})

		It("has its ConfigMap garbage collected with it", func() {
			By("Reconciling, then deleting the Gadget: the garbage collector deletes its ConfigMap, which envtest's control plane never does")
			controllerReconciler := &GadgetReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: typeNamespacedName})
			Expect(err).NotTo(HaveOccurred())
			Expect(k8sClient.Get(ctx, typeNamespacedName, gadget)).To(Succeed())
			Expect(k8sClient.Delete(ctx, gadget)).To(Succeed())
			Eventually(func() error {
				return k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: resourceName + "-gadget"}, &corev1.ConfigMap{})
			}).Should(Satisfy(errors.IsNotFound))
		})
	})
})
