package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	widgets "example.com/launcher-consumer"
)

// How long the specs wait for what the control plane's controllers and
// ours do, and how often they look.
const (
	timeout  = time.Minute
	interval = 100 * time.Millisecond
)

// What envtest's control plane, which runs no controller-manager, never
// does: its namespaces stay Terminating, and dependents stay behind.
var _ = Describe("Widget controller", func() {
	var namespace string

	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "widgets-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	// createWidget creates a green Widget and waits for the ConfigMap the
	// reconciler gives it.
	createWidget := func(name string) (*corev1.ConfigMap, client.Object) {
		widget := widgets.NewWidget(namespace, name)
		widget.Object["spec"] = map[string]any{"color": "green"}
		Expect(k8sClient.Create(ctx, widget)).To(Succeed())
		config := &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + "-config"}, config)).To(Succeed())
			g.Expect(metav1.IsControlledBy(config, widget)).To(BeTrue())
			g.Expect(config.Data).To(HaveKeyWithValue("color", "green"))
		}, timeout, interval).Should(Succeed())
		return config, widget
	}

	It("has the garbage collector delete a Widget's ConfigMap with it", func() {
		config, widget := createWidget("collected")
		Expect(k8sClient.Delete(ctx, widget)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(config), &corev1.ConfigMap{})
		}, timeout, interval).Should(Satisfy(apierrors.IsNotFound))
	})

	It("has a deleted namespace go, with its Widgets", func() {
		createWidget("doomed")
		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})
		}, timeout, interval).Should(Satisfy(apierrors.IsNotFound))
	})
})
