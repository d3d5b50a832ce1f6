package controller

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	widgets "example.com/launcher-consumer"
)

// envtest returns from Start once the webhook configurations exist, and
// BeforeSuite once the webhook server accepts connections; the API server
// calls the webhooks from when it has read the configurations, a moment
// later. So the first requests that need them poll, as envtest suites do,
// with dry-run creates, which change nothing whether the webhooks ran or not.
var _ = Describe("Widget webhooks", func() {
	It("give a Widget without a color the default one", func() {
		Eventually(func(g Gomega) string {
			widget := widgets.NewWidget("default", "colorless")
			g.Expect(k8sClient.Create(ctx, widget, client.DryRunAll)).To(Succeed())
			color, _, err := unstructured.NestedString(widget.Object, "spec", "color")
			g.Expect(err).NotTo(HaveOccurred())
			return color
		}, timeout, interval).Should(Equal(widgets.DefaultColor))
	})

	It("refuse a Widget whose color is not in the palette", func() {
		Eventually(func() error {
			widget := widgets.NewWidget("default", "purple")
			widget.Object["spec"] = map[string]any{"color": "purple"}
			return k8sClient.Create(ctx, widget, client.DryRunAll)
		}, timeout, interval).Should(MatchError(And(
			ContainSubstring(`admission webhook "vwidget-v1.example.com" denied the request`),
			ContainSubstring(`spec.color: "purple" is not in the palette`),
		)))
	})
})
