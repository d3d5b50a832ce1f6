// Package install puts what a test needs into a running control plane, ours
// or any other: CustomResourceDefinitions read from files, and the suite's
// admission and conversion webhooks pointed at a local server. Both test
// servers of sample-generic-controlplane (the in-process one in
// controlplane/testing and the launcher in testenv) use it, and so may a
// suite that keeps its own envtest.Environment.
package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// crdPollInterval is how often InstallCRDs looks whether the CRDs are served.
const crdPollInterval = 50 * time.Millisecond

// crdManifests is how ReadCRDs names what it reads.
var crdManifests = manifestKind{what: "CRD", plural: "CRDs", example: `filepath.Join("..", "config", "crd", "bases")`}

var crdGroupKind = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition").GroupKind()

// CRDs reads the CRDs in paths (ReadCRDs), points those that convert by
// webhook at the suite's webhook server (webhooks.PatchConversion), creates
// them or updates those that exist, and waits at most timeout until they
// are served (InstallCRDs). It returns the CRDs as the server has them, in
// the order read. webhooks are a test server's, prepared when it started;
// with nil ones a CRD that converts by webhook is an error, since its
// service reference would reach nothing.
func CRDs(ctx context.Context, cfg *rest.Config, webhooks *WebhookOptions, timeout time.Duration, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return nil, err
	}
	if webhooks != nil {
		err = webhooks.PatchConversion(crds)
	} else if i := slices.IndexFunc(crds, convertsByWebhook); i >= 0 {
		err = fmt.Errorf("CustomResourceDefinition %q converts by webhook, and the server has no webhooks to point it at: start it with Options.Webhooks (&install.WebhookOptions{} for the defaults) and serve its conversion at TestServer.Webhooks", crds[i].Name)
	}
	if err != nil {
		return nil, err
	}
	return InstallCRDs(ctx, cfg, crds, timeout)
}

// ReadCRDs reads the CRDs in paths, as envtest's CRDInstallOptions.Paths:
// a directory is read for its .yaml, .yml and .json files, not recursively;
// a file may hold several YAML documents. Unlike envtest it fails on what a
// test author did not mean: a path that does not exist, a directory with no
// such files, a document that is not an apiextensions.k8s.io/v1 CRD (envtest
// skips those silently, so a CRD written as v1beta1 or a kustomization.yaml
// next to the CRDs would leave the test without its API and no word why),
// and one CRD name defined twice (envtest keeps the last one).
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var c crdCollector
	if err := crdManifests.read(paths, c.add); err != nil {
		return nil, err
	}
	return c.crds, nil
}

// crdCollector collects the CRDs read, in order, refusing a name read
// twice.
type crdCollector struct {
	crds []*apiextensionsv1.CustomResourceDefinition
	from map[string]string // CRD name → where it was read
}

// add decodes a document of kind gvk read at where.
func (c *crdCollector) add(data []byte, gvk *schema.GroupVersionKind, where string) error {
	crd, err := decodeCRD(data, gvk)
	if err != nil {
		return err
	}
	if first, ok := c.from[crd.Name]; ok {
		return fmt.Errorf("CustomResourceDefinition %q is defined in %s too; keep one of them", crd.Name, first)
	}
	if c.from == nil {
		c.from = map[string]string{}
	}
	c.from[crd.Name] = where
	c.crds = append(c.crds, crd)
	return nil
}

// decodeCRD decodes one document of the kind gvk.
func decodeCRD(data []byte, gvk *schema.GroupVersionKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	switch {
	case gvk.GroupKind() != crdGroupKind:
		return nil, fmt.Errorf("%s, not a CustomResourceDefinition; only CRDs (apiVersion: %s) are installed from files: name the files or directory that hold CRDs alone, and create other objects with a client", describeKind(gvk), apiextensionsv1.SchemeGroupVersion)
	case gvk.Version != apiextensionsv1.SchemeGroupVersion.Version:
		return nil, fmt.Errorf("apiVersion %s is not served (v1beta1 was removed in Kubernetes 1.22); write apiVersion: %s", gvk.GroupVersion(), apiextensionsv1.SchemeGroupVersion)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := decodeStrict(data, crd); err != nil {
		return nil, err
	}
	if crd.Name == "" {
		return nil, fmt.Errorf("CustomResourceDefinition without metadata.name; write <plural>.<group>, e.g. %s.%s", crd.Spec.Names.Plural, crd.Spec.Group)
	}
	return crd, nil
}

// InstallCRDs creates crds or updates those that exist (a server restarted
// on the same data dir, or a CRD installed twice) to what they say now, and
// waits at most timeout until all are served: established, their resources
// in discovery, so that a RESTMapper created afterwards maps them, and every
// served version answering. A CRD whose update changed its spec (its
// schema, its conversion webhook's URL) is waited for until the API server
// serves that spec (waitForSpecServed). It returns the CRDs as the server
// has them.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if len(crds) == 0 {
		return nil, nil
	}
	deadline := time.Now().Add(timeout)
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var changed []int
	for i, crd := range crds {
		_, specChanged, err := createOrUpdate(ctx, client.ApiextensionsV1().CustomResourceDefinitions(), crd)
		if err != nil {
			return nil, fmt.Errorf("writing CustomResourceDefinition %q: %w", crd.Name, err)
		}
		if specChanged {
			changed = append(changed, i)
		}
	}
	installed, err := waitForCRDs(ctx, client, crds, timeout)
	if err != nil || len(changed) == 0 {
		return installed, err
	}
	quiet, err := quietClient(cfg)
	if err != nil {
		return nil, err
	}
	for _, i := range changed {
		if installed[i], err = waitForSpecServed(ctx, quiet, crds[i], time.Until(deadline)); err != nil {
			return nil, err
		}
	}
	return installed, nil
}

// waitForCRDs polls until every CRD is Established and each of its served
// versions lists its plural in discovery and is served. Discovery is what a client's
// RESTMapper reads, and it catches up with Established a little later: the
// aggregated /apis document learns of a new group only once the CRD's
// APIService is registered, after the CRD is established.
func waitForCRDs(ctx context.Context, client clientset.Interface, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var (
		installed []*apiextensionsv1.CustomResourceDefinition
		waiting   []string // why the last complete poll was not done, for the timeout error
	)
	err := wait.PollUntilContextTimeout(ctx, crdPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		got, notYet, err := crdsServed(ctx, client, crds)
		if ctx.Err() != nil {
			// The poll was cut short by the deadline: keep what the last
			// complete one saw, which says more than "deadline exceeded".
			return false, nil
		}
		installed, waiting = got, notYet
		return err == nil && len(notYet) == 0, err
	})
	if err != nil {
		if wait.Interrupted(err) && len(waiting) > 0 {
			return nil, fmt.Errorf("waiting for CustomResourceDefinitions to be served: %w; still waiting for %s", err, strings.Join(waiting, "; "))
		}
		return nil, err
	}
	return installed, nil
}

// crdsServed returns the CRDs as the server has them and what is not
// served yet; an error when waiting cannot help.
func crdsServed(ctx context.Context, client clientset.Interface, crds []*apiextensionsv1.CustomResourceDefinition) ([]*apiextensionsv1.CustomResourceDefinition, []string, error) {
	installed := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	var waiting []string
	for i, crd := range crds {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			waiting = append(waiting, fmt.Sprintf("%s: %v", crd.Name, err))
			continue
		}
		installed[i] = got
		if apihelpers.IsCRDConditionFalse(got, apiextensionsv1.NamesAccepted) {
			// The names conflict with another CRD's; they stay so.
			c := apihelpers.FindCRDCondition(got, apiextensionsv1.NamesAccepted)
			return nil, nil, fmt.Errorf("CustomResourceDefinition %q: names not accepted: %s: %s", crd.Name, c.Reason, c.Message)
		}
		if !apihelpers.IsCRDConditionTrue(got, apiextensionsv1.Established) {
			waiting = append(waiting, fmt.Sprintf("%s: not established (%s)", crd.Name, describeCRDCondition(apihelpers.FindCRDCondition(got, apiextensionsv1.Established))))
		}
	}
	if len(waiting) > 0 {
		return nil, waiting, nil
	}
	missing, err := missingFromDiscovery(client.Discovery(), installed)
	if err != nil {
		return nil, []string{fmt.Sprintf("discovery: %v", err)}, nil
	}
	if len(missing) > 0 {
		return installed, missing, nil
	}
	return installed, unservedVersions(ctx, client.Discovery().RESTClient(), installed), nil
}

// unservedVersions lists the served versions of crds whose resources the
// server does not know yet. Discovery alone is not enough: the CRD handler
// learns of a version added by an update from its own informer event, which
// may come after the discovery controller's, and until then answers 404 for
// it. Any other answer means the version is served (a list may fail for
// reasons of its own, such as a conversion webhook not up yet).
func unservedVersions(ctx context.Context, client rest.Interface, crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var unserved []string
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			err := client.Get().AbsPath("/apis", crd.Spec.Group, v.Name, crd.Spec.Names.Plural).Param("limit", "1").Do(ctx).Error()
			if apierrors.IsNotFound(err) {
				unserved = append(unserved, fmt.Sprintf("%s: listing %s in %s/%s: %v", crd.Name, crd.Spec.Names.Plural, crd.Spec.Group, v.Name, err))
			}
		}
	}
	return unserved
}

// missingFromDiscovery lists the served resources of crds that discovery
// does not show yet.
func missingFromDiscovery(d discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	// ServerGroupsAndResources reads the aggregated discovery documents, as
	// a RESTMapper does; a group whose discovery failed is left out of the
	// result, which is reported below as missing.
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	served := map[schema.GroupVersion]sets.Set[string]{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if served[gv] == nil {
				served[gv] = sets.New[string]()
			}
			served[gv].Insert(r.Name)
		}
	}
	var missing []string
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			if v.Served && !served[gv].Has(crd.Spec.Names.Plural) {
				missing = append(missing, fmt.Sprintf("%s: %s not in discovery of %s", crd.Name, crd.Spec.Names.Plural, gv))
			}
		}
	}
	return missing, nil
}

func describeCRDCondition(c *apiextensionsv1.CustomResourceDefinitionCondition) string {
	if c == nil {
		return "no condition yet"
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
}
