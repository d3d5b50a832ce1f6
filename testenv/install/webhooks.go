package install

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The files Prepare writes into LocalServingCertDir: the names
// controller-runtime's webhook.Server reads by default.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// DefaultLocalServingHost is where the suite's webhook server listens
// unless WebhookOptions.LocalServingHost says otherwise.
const DefaultLocalServingHost = "127.0.0.1"

// defaultConversionPath is where controller-runtime serves conversion.
const defaultConversionPath = "/convert"

// WebhookOptions are the suite's admission webhooks and where its webhook
// server listens, as envtest's WebhookInstallOptions. Prepare fills in the
// serving fields and points every webhook at the suite's server; Install
// puts the configurations into the API server and returns once they take
// effect. The suite then starts its webhook server with LocalServingHost,
// LocalServingPort and LocalServingCertDir (controller-runtime:
// webhook.NewServer(webhook.Options{Host: …, Port: …, CertDir: …})).
type WebhookOptions struct {
	// Paths are files (.yaml, .yml or .json, one or more documents each) or
	// directories of them (not read recursively) that hold
	// admissionregistration.k8s.io/v1 MutatingWebhookConfigurations and
	// ValidatingWebhookConfigurations, as envtest's Paths. Unlike envtest, a
	// missing path, a directory without such files, a document of another
	// kind (a kustomization.yaml or a Service next to config/webhook's
	// manifests.yaml: name that file), an unknown field and one
	// configuration name given twice are errors naming the file and document.
	Paths []string
	// MutatingWebhooks and ValidatingWebhooks are configurations given as
	// objects. Prepare appends those read from Paths, and patches copies:
	// the objects given stay as they are.
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration

	// LocalServingHost is the address the suite's webhook server listens on
	// and the API server calls, an IP address or a DNS name; the serving
	// certificate is for it. DefaultLocalServingHost if empty.
	LocalServingHost string
	// LocalServingHostExternalName, if set, is the name the API server
	// calls the suite's webhook server by, where it differs from
	// LocalServingHost (an API server in a container or on another
	// machine): the webhooks' URLs name it, and the serving certificate is
	// for both names.
	LocalServingHostExternalName string
	// LocalServingPort is the port the suite's webhook server listens on;
	// Prepare picks a free one on LocalServingHost if zero.
	LocalServingPort int
	// LocalServingCertDir is where Prepare writes the serving certificate
	// (CertFile) and its key (KeyFile); a new temporary directory if empty,
	// which Cleanup removes.
	LocalServingCertDir string
	// LocalServingCAData is set by Prepare: the PEM certificate of the CA
	// that signed the serving certificate, made for it alone. Every
	// webhook's caBundle holds it; a client of the suite's webhook server
	// trusts it.
	LocalServingCAData []byte

	// certificate is Prepare's, nil before: a copy of o keeps it and the
	// port, and serves Install's markers whatever became of the files.
	certificate *servingCertificate
	madeCertDir bool // LocalServingCertDir is Prepare's, for Cleanup
}

// PrepareWebhooks is what a test server does before it starts: it returns a
// prepared copy of o (Prepare), or of empty options when o is nil and a CRD
// in crds converts by webhook, and patches the conversion of crds to it
// (PatchConversion). It returns nil when o is nil and no CRD needs a
// webhook. certDir gives the certificate directory when o names none, so
// that it goes where the server's other temporary files go. The copy of an
// o that is prepared already keeps its certificate and port: a server
// restarted with the options of the one before serves the same webhook
// server. Should that server have removed the certificate directory with
// its other files, the copy writes the certificate into a new one.
func PrepareWebhooks(o *WebhookOptions, crds []*apiextensionsv1.CustomResourceDefinition, certDir func() string) (*WebhookOptions, error) {
	if o == nil {
		if !slices.ContainsFunc(crds, convertsByWebhook) {
			return nil, nil
		}
		o = &WebhookOptions{}
	}
	prepared := *o
	if prepared.LocalServingCertDir == "" {
		prepared.LocalServingCertDir = certDir()
	} else if prepared.certificate != nil {
		if _, err := os.Stat(filepath.Join(prepared.LocalServingCertDir, CertFile)); errors.Is(err, os.ErrNotExist) {
			prepared.LocalServingCertDir = certDir()
			if err := prepared.writeCertificate(); err != nil {
				return nil, err
			}
		}
	}
	if err := prepared.Prepare(); err != nil {
		return nil, err
	}
	if err := prepared.PatchConversion(crds); err != nil {
		return nil, err
	}
	return &prepared, nil
}

// Prepare reads Paths, fills in LocalServingHost and LocalServingPort,
// makes a CA and a serving certificate for the host, writes them to
// LocalServingCertDir and LocalServingCAData, and points every webhook at
// https://host:port/<path> with the CA as its caBundle: the path of its
// service reference, which it replaces, or of its URL, whose scheme, host
// and port it replaces. A webhook with neither is an error naming it.
// Prepare talks to no server, and does its work once: on options prepared
// already (or a copy of them) it does nothing.
func (o *WebhookOptions) Prepare() error {
	if o.certificate != nil {
		return nil
	}
	// The objects first, then the files, as envtest orders them.
	var (
		mutating   []readConfiguration[*admissionregistrationv1.MutatingWebhookConfiguration]
		validating []readConfiguration[*admissionregistrationv1.ValidatingWebhookConfiguration]
	)
	for _, c := range o.MutatingWebhooks {
		mutating = append(mutating, readConfiguration[*admissionregistrationv1.MutatingWebhookConfiguration]{c.DeepCopy(), "WebhookOptions.MutatingWebhooks"})
	}
	for _, c := range o.ValidatingWebhooks {
		validating = append(validating, readConfiguration[*admissionregistrationv1.ValidatingWebhookConfiguration]{c.DeepCopy(), "WebhookOptions.ValidatingWebhooks"})
	}
	mutatingFromFiles, validatingFromFiles, err := readWebhooks(o.Paths)
	if err != nil {
		return fmt.Errorf("WebhookOptions.Paths: %w", err)
	}
	mutating, validating = append(mutating, mutatingFromFiles...), append(validating, validatingFromFiles...)
	if err := errors.Join(uniqueNames(mutating), uniqueNames(validating)); err != nil {
		return err
	}

	host := o.LocalServingHost
	if host == "" {
		host = DefaultLocalServingHost
	}
	port := o.LocalServingPort
	if port == 0 {
		if port, err = freePort(host); err != nil {
			return fmt.Errorf("WebhookOptions.LocalServingPort: %w", err)
		}
	}
	var external []string
	if o.LocalServingHostExternalName != "" {
		external = []string{o.LocalServingHostExternalName}
	}
	certificate, err := newServingCertificate(host, external...)
	if err != nil {
		return fmt.Errorf("WebhookOptions.LocalServingHost: %w", err)
	}
	server := localServer{hostPort: net.JoinHostPort(o.calledHost(host), strconv.Itoa(port)), caBundle: certificate.ca}
	// Every webhook is patched (the copies) before anything is written or
	// set, so that a mistake in one leaves no directory behind and o as
	// it was.
	var (
		patchedMutating   []*admissionregistrationv1.MutatingWebhookConfiguration
		patchedValidating []*admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for _, c := range mutating {
		for i := range c.obj.Webhooks {
			if err := server.patch(&c.obj.Webhooks[i].ClientConfig, c.describe(c.obj.Webhooks[i].Name)); err != nil {
				return err
			}
		}
		patchedMutating = append(patchedMutating, c.obj)
	}
	for _, c := range validating {
		for i := range c.obj.Webhooks {
			if err := server.patch(&c.obj.Webhooks[i].ClientConfig, c.describe(c.obj.Webhooks[i].Name)); err != nil {
				return err
			}
		}
		patchedValidating = append(patchedValidating, c.obj)
	}

	if o.LocalServingCertDir == "" {
		if o.LocalServingCertDir, err = os.MkdirTemp("", "webhook-serving-certs-"); err != nil {
			return fmt.Errorf("WebhookOptions.LocalServingCertDir: %w", err)
		}
		o.madeCertDir = true
	}
	o.MutatingWebhooks, o.ValidatingWebhooks = patchedMutating, patchedValidating
	o.LocalServingHost, o.LocalServingPort, o.LocalServingCAData, o.certificate = host, port, certificate.ca, certificate
	return o.writeCertificate()
}

// writeCertificate writes the serving certificate and its key into
// LocalServingCertDir, which it makes if need be.
func (o *WebhookOptions) writeCertificate() error {
	if err := os.MkdirAll(o.LocalServingCertDir, 0o700); err != nil {
		return fmt.Errorf("WebhookOptions.LocalServingCertDir: %w", err)
	}
	for name, data := range map[string][]byte{CertFile: o.certificate.cert, KeyFile: o.certificate.key} {
		if err := os.WriteFile(filepath.Join(o.LocalServingCertDir, name), data, 0o600); err != nil {
			return fmt.Errorf("WebhookOptions.LocalServingCertDir: %w", err)
		}
	}
	return nil
}

// PatchConversion points the conversion webhook of every CRD in crds whose
// spec.conversion.strategy is Webhook at the suite's server, as Prepare
// does an admission webhook: https://host:port/<path> with the CA as
// caBundle, where path is its service reference's, else its URL's, else
// /convert (controller-runtime's). Other CRDs stay as they are. It prepares
// o first if need be. Call it before the CRDs are created, so that no
// request is ever converted by another server.
func (o *WebhookOptions) PatchConversion(crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := o.Prepare(); err != nil {
		return err
	}
	server := localServer{hostPort: net.JoinHostPort(o.calledHost(o.LocalServingHost), strconv.Itoa(o.LocalServingPort)), caBundle: o.LocalServingCAData}
	for _, crd := range crds {
		if !convertsByWebhook(crd) {
			continue
		}
		if crd.Spec.Conversion.Webhook == nil {
			crd.Spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{}
		}
		webhook := crd.Spec.Conversion.Webhook
		if webhook.ClientConfig == nil {
			webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{}
		}
		cc := webhook.ClientConfig
		path := defaultConversionPath
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			path = *cc.Service.Path
		case cc.URL != nil:
			u, err := url.Parse(*cc.URL)
			if err != nil {
				return fmt.Errorf("CustomResourceDefinition %q: spec.conversion.webhook.clientConfig.url: %w", crd.Name, err)
			}
			if u.Path != "" {
				path = u.Path
			}
		}
		u := server.url(path)
		cc.Service, cc.URL, cc.CABundle = nil, &u, server.caBundle
	}
	return nil
}

// calledHost is the host the API server calls the webhooks at.
func (o *WebhookOptions) calledHost(host string) string {
	if o.LocalServingHostExternalName != "" {
		return o.LocalServingHostExternalName
	}
	return host
}

// Cleanup removes LocalServingCertDir if Prepare made it.
func (o *WebhookOptions) Cleanup() error {
	if !o.madeCertDir {
		return nil
	}
	return os.RemoveAll(o.LocalServingCertDir)
}

func convertsByWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
}

// localServer is the suite's webhook server, as a webhook's client config
// names it.
type localServer struct {
	hostPort string
	caBundle []byte
}

func (s localServer) url(path string) string {
	return (&url.URL{Scheme: "https", Host: s.hostPort, Path: path}).String()
}

// patch points cc at the server, keeping the path of its service reference
// or URL; what names the webhook for errors.
func (s localServer) patch(cc *admissionregistrationv1.WebhookClientConfig, what string) error {
	var path string
	switch {
	case cc.Service != nil && cc.Service.Path != nil:
		path = *cc.Service.Path
	case cc.Service == nil && cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("%s: clientConfig.url: %w", what, err)
		}
		path = u.Path
	default:
		return fmt.Errorf("%s: clientConfig has neither service.path nor url, so the path it is served at is unknown; write service.path (or url) with the path the suite's webhook server serves it at, e.g. /validate-example-com-v1-widget", what)
	}
	u := s.url(path)
	cc.Service, cc.URL, cc.CABundle = nil, &u, s.caBundle
	return nil
}

// freePort returns a port on host that nothing listens on now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	defer l.Close() //nolint:errcheck // only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

// webhookConfiguration is what the two kinds of configuration share.
type webhookConfiguration interface {
	*admissionregistrationv1.MutatingWebhookConfiguration | *admissionregistrationv1.ValidatingWebhookConfiguration
	GetName() string
	GetObjectKind() schema.ObjectKind
}

// readConfiguration is a configuration and where it came from, for errors.
type readConfiguration[T webhookConfiguration] struct {
	obj   T
	where string
}

func (c readConfiguration[T]) kind() string {
	if _, ok := any(c.obj).(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
		return "MutatingWebhookConfiguration"
	}
	return "ValidatingWebhookConfiguration"
}

// describe names the webhook name of c, for errors.
func (c readConfiguration[T]) describe(webhook string) string {
	return fmt.Sprintf("%s: webhook %q of %s %q", c.where, webhook, c.kind(), c.obj.GetName())
}

// uniqueNames fails when two configurations have one name: the second
// would replace the first.
func uniqueNames[T webhookConfiguration](configurations []readConfiguration[T]) error {
	from := map[string]string{}
	for _, c := range configurations {
		if first, ok := from[c.obj.GetName()]; ok {
			return fmt.Errorf("%s %q is given in %s and again in %s; keep one of them", c.kind(), c.obj.GetName(), first, c.where)
		}
		from[c.obj.GetName()] = c.where
	}
	return nil
}

var webhookManifests = manifestKind{what: "webhook configuration", plural: "webhook configurations", example: `filepath.Join("..", "config", "webhook", "manifests.yaml")`}

// readWebhooks reads the configurations in paths.
func readWebhooks(paths []string) ([]readConfiguration[*admissionregistrationv1.MutatingWebhookConfiguration], []readConfiguration[*admissionregistrationv1.ValidatingWebhookConfiguration], error) {
	var (
		mutating   []readConfiguration[*admissionregistrationv1.MutatingWebhookConfiguration]
		validating []readConfiguration[*admissionregistrationv1.ValidatingWebhookConfiguration]
	)
	err := webhookManifests.read(paths, func(data []byte, gvk *schema.GroupVersionKind, where string) error {
		if gvk.Group != admissionregistrationv1.GroupName || (gvk.Kind != "MutatingWebhookConfiguration" && gvk.Kind != "ValidatingWebhookConfiguration") {
			return fmt.Errorf("%s, not a MutatingWebhookConfiguration or ValidatingWebhookConfiguration; only those (apiVersion: %s) are installed from WebhookOptions.Paths: name the files that hold them alone (kubebuilder's config/webhook/manifests.yaml, not its directory), and create other objects with a client", describeKind(gvk), admissionregistrationv1.SchemeGroupVersion)
		}
		if gvk.Version != admissionregistrationv1.SchemeGroupVersion.Version {
			return fmt.Errorf("apiVersion %s is not served (v1beta1 was removed in Kubernetes 1.22); write apiVersion: %s", gvk.GroupVersion(), admissionregistrationv1.SchemeGroupVersion)
		}
		if gvk.Kind == "MutatingWebhookConfiguration" {
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := decodeNamed(data, c); err != nil {
				return err
			}
			mutating = append(mutating, readConfiguration[*admissionregistrationv1.MutatingWebhookConfiguration]{c, where})
			return nil
		}
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := decodeNamed(data, c); err != nil {
			return err
		}
		validating = append(validating, readConfiguration[*admissionregistrationv1.ValidatingWebhookConfiguration]{c, where})
		return nil
	})
	return mutating, validating, err
}

// decodeNamed decodes a configuration strictly and requires its name.
func decodeNamed[T webhookConfiguration](data []byte, into T) error {
	if err := decodeStrict(data, any(into).(runtime.Object)); err != nil {
		return err
	}
	if into.GetName() == "" {
		return fmt.Errorf("%s without metadata.name; give it one", into.GetObjectKind().GroupVersionKind().Kind)
	}
	return nil
}
