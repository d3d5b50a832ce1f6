// Package envtest is controller-runtime's envtest
// (sigs.k8s.io/controller-runtime/pkg/envtest, v0.25) on
// sample-generic-controlplane: the same Environment, fields and methods,
// with envtest's meaning, so that a suite kubebuilder scaffolded switches by
// changing its import line alone:
//
//	import "sigs.k8s.io/sample-generic-controlplane/testenv/envtest"
//
//	testEnv = &envtest.Environment{
//		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
//		ErrorIfCRDPathMissing: true,
//		WebhookInstallOptions: envtest.WebhookInstallOptions{
//			Paths: []string{filepath.Join("..", "..", "config", "webhook")},
//		},
//	}
//	cfg, err = testEnv.Start()
//	…
//	err = testEnv.Stop()
//
// Start runs the control plane as testenv.Start does (one implementation:
// this package maps the Environment onto testenv.Options): a process of the
// sample-generic-controlplane binary ($SGCP_BINARY, else on $PATH), on a
// data dir of its own, with the CRDs and webhooks installed, and returns
// once the CRDs are served and the webhook configurations are in effect in
// the API server: the first request after the suite's manager starts its
// webhook server reaches it, with no polling left to the test.
//
// What differs from envtest, so that a suite is not surprised:
//
//   - The control plane runs the generic controllers: the garbage collector
//     deletes dependents whose owners are gone, and a deleted namespace is
//     emptied and removed, as on a real cluster (envtest's kube-apiserver
//     alone leaves both undone). A test that relied on objects staying in
//     a deleted namespace sees them go.
//   - It serves only the generic APIs (no Pods, Deployments, Services,
//     Nodes), plus networking.sigs.k8s.io NetworkClaims; a suite that needs
//     the container APIs needs envtest.
//   - BinaryAssetsDirectory and the DownloadBinaryAssets fields are
//     accepted and ignored: there is no kube-apiserver or etcd to find or
//     download. The binary comes from $SGCP_BINARY or $PATH.
//   - A CRD name defined in two files is an error naming both (envtest
//     keeps the last), and a document of the kinds read is decoded
//     strictly: a misspelt field is an error naming it.
//   - A path that exists but holds nothing of what was asked for is an
//     error like a missing one: with ErrorIfCRDPathMissing for CRDs, and
//     for webhooks unless IgnoreErrorIfPathMissing.
//   - Start waits until the API server calls the webhooks (not only until
//     their configurations are stored), on an existing cluster too.
//   - AuthenticatedUser has Config and KubeConfig, not Kubectl.
//
// Like envtest it honours USE_EXISTING_CLUSTER,
// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT,
// KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT and
// KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT, and skips what is not for it in
// the directories it reads (kubebuilder's kustomization.yaml, service.yaml
// and patches), naming each skipped file or document at log verbosity 1.
package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/testenv"
	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

// The environment variables envtest reads, with its meaning.
const (
	envUseExistingCluster = "USE_EXISTING_CLUSTER"
	envStartTimeout       = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"
	envStopTimeout        = "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT"
	envAttachOutput       = "KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT"
)

// envtest's defaults.
const (
	defaultStartTimeout = 20 * time.Second
	defaultStopTimeout  = 20 * time.Second
	// defaultMaxWait bounds each wait for CRDs and webhooks, as envtest's
	// MaxTime defaults to.
	defaultMaxWait = 10 * time.Second
)

// Environment is a control plane for a test suite, with its CRDs and
// webhooks: envtest.Environment's fields, with envtest's meaning.
type Environment struct {
	// Scheme is used to find which CRDs convert by webhook (those of
	// GroupKinds whose types in Scheme implement controller-runtime's
	// conversion.Hub and conversion.Convertible); client-go's scheme if
	// nil. Start sets it.
	Scheme *runtime.Scheme
	// Config is the admin's client configuration, set by Start. With
	// UseExistingCluster, a Config set before Start is used.
	Config *rest.Config
	// KubeConfig is Config as a kubeconfig file's bytes, set by Start.
	KubeConfig []byte

	// CRDInstallOptions are the CRDs to install; CRDDirectoryPaths, CRDs,
	// ErrorIfCRDPathMissing and WebhookInstallOptions are merged into them.
	CRDInstallOptions CRDInstallOptions
	// WebhookInstallOptions are the suite's webhooks and where its webhook
	// server listens; Start fills in LocalServingHost, LocalServingPort,
	// LocalServingCertDir and LocalServingCAData (always, webhooks or
	// not), and the configurations it read.
	WebhookInstallOptions WebhookInstallOptions
	// ErrorIfCRDPathMissing makes a CRD path that does not exist, or holds
	// no CRD, an error.
	ErrorIfCRDPathMissing bool
	// CRDs are CRDs as objects; Start sets it to the CRDs installed, as
	// the server had them once they were served.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDDirectoryPaths are files or directories of CRDs.
	CRDDirectoryPaths []string

	// DownloadBinaryAssets, DownloadBinaryAssetsVersion,
	// DownloadBinaryAssetsIndexURL and BinaryAssetsDirectory are accepted
	// and ignored: there is no kube-apiserver or etcd binary to find.
	DownloadBinaryAssets         bool
	DownloadBinaryAssetsVersion  string
	DownloadBinaryAssetsIndexURL string
	BinaryAssetsDirectory        string

	// UseExistingCluster: install the CRDs and webhooks into the cluster
	// of Config (or of the kubeconfig that $KUBECONFIG or ~/.kube/config
	// names) instead of starting a control plane. nil: as
	// $USE_EXISTING_CLUSTER says.
	UseExistingCluster *bool

	// ControlPlaneStartTimeout bounds the start (20 s, or
	// $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT, if zero);
	// ControlPlaneStopTimeout the wait after SIGTERM before the process is
	// killed (20 s, or $KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT).
	ControlPlaneStartTimeout time.Duration
	ControlPlaneStopTimeout  time.Duration

	// AttachControlPlaneOutput copies the control plane's output to the
	// test process's (so does $KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true).
	AttachControlPlaneOutput bool

	server *testenv.TestServer
	// given: the serving fields of WebhookInstallOptions as the suite set
	// them, before Start filled them in.
	given servingFields
	// installed: the CRDs Start installed into an existing cluster, which
	// CleanUpAfterUse removes at Stop.
	installed []*apiextensionsv1.CustomResourceDefinition
	webhooks  *install.WebhookOptions
}

// CRDInstallOptions are the CRDs to install, as envtest's.
type CRDInstallOptions struct {
	// Scheme finds the CRDs that convert by webhook; Environment.Scheme if nil.
	Scheme *runtime.Scheme
	// Paths are files or directories of CRDs.
	Paths []string
	// CRDs are CRDs as objects.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ErrorIfPathMissing makes a path that does not exist, or holds no
	// CRD, an error.
	ErrorIfPathMissing bool
	// MaxTime bounds the wait for the CRDs to be served (10 s if zero).
	MaxTime time.Duration
	// PollInterval is accepted and ignored: the wait looks as often as it
	// needs to.
	PollInterval time.Duration
	// CleanUpAfterUse deletes the CRDs at Stop (with UseExistingCluster;
	// a control plane Start started goes with its data).
	CleanUpAfterUse bool
	// WebhookOptions is set by Start to Environment.WebhookInstallOptions.
	WebhookOptions WebhookInstallOptions
}

// WebhookInstallOptions are the suite's webhooks and where its webhook
// server listens, as envtest's.
type WebhookInstallOptions struct {
	// Paths are files or directories of MutatingWebhookConfigurations and
	// ValidatingWebhookConfigurations (kubebuilder's config/webhook).
	Paths []string
	// MutatingWebhooks and ValidatingWebhooks are configurations as
	// objects; Start adds those read from Paths, pointed at the local
	// webhook server.
	MutatingWebhooks   []*admissionv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionv1.ValidatingWebhookConfiguration
	// IgnoreSchemeConvertible: every CRD (but those that preserve unknown
	// fields) converts by the webhook at /convert of the local server,
	// whatever the Scheme says; else a CRD's conversion follows the Scheme.
	IgnoreSchemeConvertible bool
	// IgnoreErrorIfPathMissing: a path that does not exist, or holds no
	// webhook configuration, is skipped rather than an error.
	IgnoreErrorIfPathMissing bool
	// LocalServingHost is where the suite's webhook server listens
	// (127.0.0.1 if empty), LocalServingPort its port (a free one if
	// zero), LocalServingCertDir where its serving certificate and key
	// are written (tls.crt, tls.key; a new directory if empty, removed at
	// Stop). Start fills them in.
	LocalServingHost    string
	LocalServingPort    int
	LocalServingCertDir string
	// LocalServingCAData is set by Start: the CA that signed the serving
	// certificate, which the API server trusts for the webhooks.
	LocalServingCAData []byte
	// LocalServingHostExternalName is the name the API server calls the
	// webhook server by, if it differs from LocalServingHost.
	LocalServingHostExternalName string
	// MaxTime bounds the wait for the webhooks to take effect (10 s if
	// zero); PollInterval is accepted and ignored.
	MaxTime      time.Duration
	PollInterval time.Duration
}

// User is a user to provision, as envtest's: a name and groups.
type User struct {
	Name   string
	Groups []string
}

// AuthenticatedUser is a user AddUser provisioned.
type AuthenticatedUser struct {
	User
	config *rest.Config
}

// Config is a client configuration that authenticates as the user.
func (u *AuthenticatedUser) Config() *rest.Config { return rest.CopyConfig(u.config) }

// KubeConfig is Config as a kubeconfig file's bytes.
func (u *AuthenticatedUser) KubeConfig() ([]byte, error) { return kubeconfigOf(u.config, u.Name) }

// Start starts the control plane (or, with UseExistingCluster, takes the
// existing cluster), installs the CRDs and webhooks, and returns the admin's
// client configuration once the CRDs are served and the webhooks are in
// effect.
func (te *Environment) Start() (*rest.Config, error) {
	if te.server != nil || te.webhooks != nil {
		return nil, errors.New("envtest: Start called twice; call Stop first")
	}
	// What Start fills in of the serving fields goes back at Stop: a
	// second Start makes its own certificate directory (and removes it),
	// on the host and port the suite gave, if any.
	w := te.WebhookInstallOptions
	te.given = servingFields{host: w.LocalServingHost, port: w.LocalServingPort, certDir: w.LocalServingCertDir, caData: w.LocalServingCAData}
	if err := te.defaults(); err != nil {
		return nil, err
	}
	crds, webhooks, err := te.read()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), te.ControlPlaneStartTimeout+te.installTimeout()*2)
	defer cancel()
	if te.useExistingCluster() {
		if err := te.startOnExisting(ctx, crds, webhooks); err != nil {
			return nil, errors.Join(err, te.Stop())
		}
	} else {
		opts := testenv.Options{
			CRDs:           crds,
			Webhooks:       webhooks,
			StartTimeout:   te.ControlPlaneStartTimeout,
			StopTimeout:    te.ControlPlaneStopTimeout,
			InstallTimeout: te.installTimeout(),
			AttachOutput:   te.AttachControlPlaneOutput,
		}
		s, err := testenv.Start(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("envtest: %w", err)
		}
		te.server, te.webhooks, te.CRDs = s, s.Webhooks, s.CRDs
		te.Config = rest.CopyConfig(s.ClientConfig)
	}
	if te.KubeConfig, err = kubeconfigOf(te.Config, "admin"); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	te.setWebhookFields()
	return te.Config, nil
}

// defaults fills in what envtest fills in before a start.
func (te *Environment) defaults() error {
	var err error
	if te.ControlPlaneStartTimeout == 0 {
		if te.ControlPlaneStartTimeout, err = durationFromEnv(envStartTimeout, defaultStartTimeout); err != nil {
			return err
		}
	}
	if te.ControlPlaneStopTimeout == 0 {
		if te.ControlPlaneStopTimeout, err = durationFromEnv(envStopTimeout, defaultStopTimeout); err != nil {
			return err
		}
	}
	if os.Getenv(envAttachOutput) == "true" {
		te.AttachControlPlaneOutput = true
	}
	if te.Scheme == nil {
		te.Scheme = scheme.Scheme
	}
	if te.CRDInstallOptions.Scheme == nil {
		te.CRDInstallOptions.Scheme = te.Scheme
	}
	// Merged by name, as envtest merges them: CRDs wins over
	// CRDInstallOptions.CRDs (and a second Start finds in CRDs those the
	// first installed).
	te.CRDInstallOptions.CRDs = mergeByName(te.CRDInstallOptions.CRDs, te.CRDs)
	for _, p := range te.CRDDirectoryPaths {
		if !slices.Contains(te.CRDInstallOptions.Paths, p) {
			te.CRDInstallOptions.Paths = append(te.CRDInstallOptions.Paths, p)
		}
	}
	te.CRDInstallOptions.ErrorIfPathMissing = te.ErrorIfCRDPathMissing
	te.CRDInstallOptions.WebhookOptions = te.WebhookInstallOptions
	return nil
}

func durationFromEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("envtest: $%s=%q: write a duration, e.g. 60s", name, v)
	}
	return d, nil
}

// installTimeout bounds each wait for CRDs and for webhooks: the longer of
// the two MaxTimes.
func (te *Environment) installTimeout() time.Duration {
	crd, webhook := te.CRDInstallOptions.MaxTime, te.WebhookInstallOptions.MaxTime
	if crd == 0 {
		crd = defaultMaxWait
	}
	if webhook == 0 {
		webhook = defaultMaxWait
	}
	return max(crd, webhook)
}

// read reads the CRDs and webhook configurations, skipping what is not for
// it, and sets the CRDs' conversion as the Scheme says.
func (te *Environment) read() ([]*apiextensionsv1.CustomResourceDefinition, *install.WebhookOptions, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range te.CRDInstallOptions.CRDs {
		crds = append(crds, crd.DeepCopy())
	}
	fromFiles, err := install.ReadCRDsSkipping(te.CRDInstallOptions.Paths, te.CRDInstallOptions.ErrorIfPathMissing)
	if err != nil {
		return nil, nil, fmt.Errorf("envtest: CRDDirectoryPaths: %w", err)
	}
	// A CRD read from a file wins over an object of the same name, as in
	// envtest, where the last one read wins: after a first Start, CRDs
	// holds those it installed from the files.
	crds = mergeByName(crds, fromFiles)
	w := te.WebhookInstallOptions
	mutating, validating, err := install.ReadWebhooksSkipping(w.Paths, !w.IgnoreErrorIfPathMissing)
	if err != nil {
		return nil, nil, fmt.Errorf("envtest: WebhookInstallOptions.Paths: %w", err)
	}
	webhooks := &install.WebhookOptions{
		MutatingWebhooks:             mergeByName(w.MutatingWebhooks, mutating),
		ValidatingWebhooks:           mergeByName(w.ValidatingWebhooks, validating),
		LocalServingHost:             w.LocalServingHost,
		LocalServingPort:             w.LocalServingPort,
		LocalServingCertDir:          w.LocalServingCertDir,
		LocalServingHostExternalName: w.LocalServingHostExternalName,
	}
	setConversion(crds, te.CRDInstallOptions.Scheme, w.IgnoreSchemeConvertible)
	return crds, webhooks, nil
}

// mergeByName is first and then second, where an object of second
// replaces one of first of its name, as envtest's merges do: a
// configuration read from a file wins over an object given (after a first
// Start, the options hold the configurations it read).
func mergeByName[T interface{ GetName() string }](first, second []T) []T {
	merged := slices.DeleteFunc(slices.Clone(first), func(o T) bool {
		return slices.ContainsFunc(second, func(f T) bool { return f.GetName() == o.GetName() })
	})
	return append(merged, second...)
}

// startOnExisting installs the CRDs and webhooks into the cluster of
// te.Config, or of the default kubeconfig.
func (te *Environment) startOnExisting(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, webhooks *install.WebhookOptions) error {
	klog.Background().WithName("testenv").V(1).Info("Using an existing cluster")
	if te.Config == nil {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return fmt.Errorf("envtest: UseExistingCluster: the client configuration of the existing cluster: %w", err)
		}
		te.Config = cfg
	}
	prepared, err := install.PrepareWebhooks(webhooks, crds, func() string { return "" })
	if err != nil {
		return fmt.Errorf("envtest: WebhookInstallOptions: %w", err)
	}
	te.webhooks = prepared
	if te.CRDs, err = install.InstallCRDs(ctx, te.Config, crds, te.installTimeout()); err != nil {
		return fmt.Errorf("envtest: CRDs: %w", err)
	}
	te.installed = te.CRDs
	if err := prepared.Install(ctx, te.Config, te.installTimeout()); err != nil {
		return fmt.Errorf("envtest: WebhookInstallOptions: %w", err)
	}
	return nil
}

// setWebhookFields tells the suite where to serve its webhooks.
func (te *Environment) setWebhookFields() {
	if te.webhooks == nil {
		return
	}
	w := &te.WebhookInstallOptions
	w.LocalServingHost, w.LocalServingPort = te.webhooks.LocalServingHost, te.webhooks.LocalServingPort
	w.LocalServingCertDir, w.LocalServingCAData = te.webhooks.LocalServingCertDir, te.webhooks.LocalServingCAData
	w.MutatingWebhooks, w.ValidatingWebhooks = te.webhooks.MutatingWebhooks, te.webhooks.ValidatingWebhooks
	te.CRDInstallOptions.WebhookOptions = *w
}

// Stop stops the control plane Start started and removes its files, or,
// with UseExistingCluster, deletes the CRDs when CleanUpAfterUse says so.
func (te *Environment) Stop() error {
	var errs []error
	if te.server != nil {
		errs = append(errs, te.server.Stop())
		te.server = nil
	}
	if len(te.installed) > 0 && te.CRDInstallOptions.CleanUpAfterUse {
		errs = append(errs, uninstall(te.Config, te.installed, te.installTimeout()))
		te.installed = nil
	}
	if te.webhooks != nil {
		errs = append(errs, te.webhooks.Cleanup())
		te.webhooks = nil
		te.given.restore(&te.WebhookInstallOptions)
	}
	return errors.Join(errs...)
}

// servingFields are where the suite serves its webhooks.
type servingFields struct {
	host, certDir string
	port          int
	caData        []byte
}

func (f servingFields) restore(w *WebhookInstallOptions) {
	w.LocalServingHost, w.LocalServingPort, w.LocalServingCertDir, w.LocalServingCAData = f.host, f.port, f.certDir, f.caData
}

// uninstall deletes crds from the cluster of cfg and waits, at most
// timeout, until they are gone (their objects deleted first), as envtest's
// UninstallCRDs does.
func uninstall(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if err := api.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s still there %s after its deletion: %w", crd.Name, timeout, err)
		}
	}
	return nil
}

// AddUser provisions a user authenticated by a client certificate the
// control plane's CA issued, in the user's groups; it may do nothing until
// an RBAC binding names it or one of its groups. The returned Config has
// baseConfig's settings (rate limits, timeouts, user agent) with the
// user's credentials. It needs the control plane Start started.
func (te *Environment) AddUser(user User, baseConfig *rest.Config) (*AuthenticatedUser, error) {
	if te.server == nil {
		return nil, errors.New("envtest: AddUser needs the control plane Start starts (not an existing cluster); call Start first")
	}
	issued, err := te.server.ClientConfigFor(user.Name, user.Groups...)
	if err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	cfg := issued
	if baseConfig != nil {
		cfg = rest.CopyConfig(baseConfig)
		cfg.Host, cfg.APIPath = issued.Host, issued.APIPath
		cfg.TLSClientConfig = issued.TLSClientConfig
		cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password = "", "", "", ""
		cfg.AuthProvider, cfg.ExecProvider, cfg.Impersonate = nil, nil, rest.ImpersonationConfig{}
	}
	return &AuthenticatedUser{User: user, config: cfg}, nil
}

func (te *Environment) useExistingCluster() bool {
	if te.UseExistingCluster == nil {
		return strings.EqualFold(os.Getenv(envUseExistingCluster), "true")
	}
	return *te.UseExistingCluster
}

// kubeconfigOf writes cfg as a kubeconfig, its credentials inline.
func kubeconfigOf(cfg *rest.Config, user string) ([]byte, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		TLSServerName:            cfg.ServerName,
	}
	c.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
	}
	c.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user}
	c.CurrentContext = "envtest"
	data, err := clientcmd.Write(*c)
	if err != nil {
		return nil, fmt.Errorf("envtest: writing the kubeconfig of %s: %w", user, err)
	}
	return data, nil
}
