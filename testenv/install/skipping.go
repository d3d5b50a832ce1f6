package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// errNotWanted is what a decode function of readSkipping returns for a
// document of a kind it does not read: skipped, not an error.
var errNotWanted = errors.New("not of the kind read")

// readSkipping reads paths as envtest does, for suites laid out the way
// kubebuilder lays them out (config/crd holds kustomization.yaml beside
// bases/, config/webhook holds kustomization.yaml and service.yaml beside
// manifests.yaml): files of other extensions and documents of other kinds
// are skipped, each with a V(1) line naming it. A path that does not exist,
// or that holds nothing of the kind read, is an error when errorIfMissing
// (envtest's ErrorIfPathMissing) and a V(1) line otherwise. A document of
// the kind read is decoded strictly, as read does: a misspelt field is an
// error, never a skip.
func (k manifestKind) readSkipping(paths []string, errorIfMissing bool, decode func(data []byte, gvk *schema.GroupVersionKind, where string) error) error {
	logger := klog.Background().WithName("testenv")
	read := map[string]int{} // file → documents of the kind read in it
	for _, path := range paths {
		info, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			if errorIfMissing {
				_, err := k.files(path) // its error says where relative paths start
				return err
			}
			logger.V(1).Info("Skipped a path that does not exist", "path", path, "reading", k.plural)
			continue
		}
		if err != nil {
			return err
		}
		files := []string{path}
		if info.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			files = nil
			for _, e := range entries {
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		found := 0
		for _, file := range files {
			if !slices.Contains(manifestFileExtensions, filepath.Ext(file)) {
				logger.V(1).Info("Skipped a file that is not .yaml, .yml or .json", "file", file, "reading", k.plural)
				continue
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				return fmt.Errorf("%q: %w", file, err)
			}
			if n, ok := read[abs]; ok {
				found += n
				continue
			}
			n := 0
			err = eachDocument(file, func(data []byte, gvk *schema.GroupVersionKind, where string) error {
				err := decode(data, gvk, where)
				if errors.Is(err, errNotWanted) {
					logger.V(1).Info("Skipped a document", "document", where, "kind", describeKind(gvk), "reading", k.plural)
					return nil
				}
				if err == nil {
					n++
				}
				return err
			})
			if err != nil {
				return err
			}
			read[abs], found = n, found+n
		}
		if found == 0 {
			if errorIfMissing {
				return fmt.Errorf("%q holds no %s (files of other extensions and documents of other kinds are skipped, subdirectories are not read); name the file or directory the %s are in, e.g. %s", path, k.plural, k.plural, k.example)
			}
			logger.V(1).Info("Found nothing to read", "path", path, "reading", k.plural)
		}
	}
	return nil
}

// ReadCRDsSkipping reads the CRDs in paths as envtest reads them: what is
// not an apiextensions.k8s.io/v1 CustomResourceDefinition (a
// kustomization.yaml, a patch, a CRD of the removed v1beta1) is skipped with
// a V(1) line, and a path that does not exist or holds no CRD is an error
// only when errorIfMissing. Unlike envtest, one CRD name defined twice is
// an error naming both places (envtest keeps the last one it read).
func ReadCRDsSkipping(paths []string, errorIfMissing bool) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var c crdCollector
	err := crdManifests.readSkipping(paths, errorIfMissing, func(data []byte, gvk *schema.GroupVersionKind, where string) error {
		if *gvk != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
			return errNotWanted
		}
		return c.add(data, gvk, where)
	})
	return c.crds, err
}

// ReadWebhooksSkipping reads the admissionregistration.k8s.io/v1
// MutatingWebhookConfigurations and ValidatingWebhookConfigurations in
// paths as envtest reads them: other documents (kubebuilder's
// kustomization.yaml and service.yaml in config/webhook) are skipped with
// a V(1) line, and a path that does not exist or holds none is an error
// only when errorIfMissing. The configurations go to WebhookOptions'
// MutatingWebhooks and ValidatingWebhooks.
func ReadWebhooksSkipping(paths []string, errorIfMissing bool) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var (
		mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
		validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	)
	err := webhookManifests.readSkipping(paths, errorIfMissing, func(data []byte, gvk *schema.GroupVersionKind, where string) error {
		switch *gvk {
		case admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"):
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := decodeNamed(data, c); err != nil {
				return err
			}
			mutating = append(mutating, c)
		case admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"):
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := decodeNamed(data, c); err != nil {
				return err
			}
			validating = append(validating, c)
		default:
			return errNotWanted
		}
		return nil
	})
	return mutating, validating, err
}
