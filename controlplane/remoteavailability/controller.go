// Package remoteavailability sets the Available condition of the
// APIServices served by another server, as upstream's remote availability
// controller does, with the service references resolved by ServiceLocations
// instead of Services and EndpointSlices, which the generic control plane
// does not serve. Without it, such an APIService has no condition at all:
// the aggregator proxies nothing to it, and a user cannot see why.
package remoteavailability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	informers "k8s.io/kube-aggregator/pkg/client/informers/externalversions/apiregistration/v1"
	listers "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/validation"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/serviceresolver"
)

// The reasons of the Available condition: upstream's, where they mean the
// same.
const (
	// ReasonPassed: the server answered discovery of the group version.
	ReasonPassed = "Passed"
	// ReasonServiceNotFound: no ServiceLocation locates the service, and
	// its DNS name does not resolve.
	ReasonServiceNotFound = "ServiceNotFound"
	// ReasonServicePortError: the ServiceLocation lists no such port.
	ReasonServicePortError = "ServicePortError"
	// ReasonServiceAccessError: the ServiceLocation could not be read.
	ReasonServiceAccessError = "ServiceAccessError"
	// ReasonFailedDiscoveryCheck: the server did not answer discovery.
	ReasonFailedDiscoveryCheck = "FailedDiscoveryCheck"
)

const (
	// resyncPeriod rechecks every APIService this often, as upstream does:
	// a server can go away without any object changing.
	resyncPeriod = 30 * time.Second
	// discoveryTimeout bounds one discovery request, as upstream's.
	discoveryTimeout = 5 * time.Second
)

// Locator says where a service reference leads.
type Locator interface {
	Locate(namespace, name string, port int32) (serviceresolver.Location, error)
}

// Controller keeps the Available condition of remote APIServices.
type Controller struct {
	client     apiregistrationclient.APIServicesGetter
	apiService listers.APIServiceLister
	locator    Locator
	// dial and proxyCertKey are the aggregator's: its dialer and the
	// front-proxy client certificate it presents to aggregated servers.
	dial         *transport.DialHolder
	proxyCertKey func() ([]byte, []byte)

	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller of the APIServices of apiServices, rechecked
// when a ServiceLocation of locations changes (nil: none are served).
func New(apiServices informers.APIServiceInformer, locations cache.SharedIndexInformer, client apiregistrationclient.APIServicesGetter,
	locator Locator, dial *transport.DialHolder, proxyCertKey func() ([]byte, []byte)) (*Controller, error) {
	c := &Controller{
		client:       client,
		apiService:   apiServices.Lister(),
		locator:      locator,
		dial:         dial,
		proxyCertKey: proxyCertKey,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// Upstream's: a tight first retry, as a server that just
			// started is likely to answer the next time.
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, resyncPeriod),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "RemoteAvailabilityController"},
		),
	}
	handler, err := apiServices.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueAPIService,
		UpdateFunc: func(_, obj any) { c.enqueueAPIService(obj) },
	}, resyncPeriod)
	if err != nil {
		return nil, err
	}
	c.synced = append(c.synced, handler.HasSynced)
	if locations != nil {
		handler, err := locations.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueLocated,
			UpdateFunc: func(_, obj any) { c.enqueueLocated(obj) },
			DeleteFunc: c.enqueueLocated,
		})
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, handler.HasSynced)
	}
	return c, nil
}

func (c *Controller) enqueueAPIService(obj any) {
	if s, ok := obj.(*apiregistrationv1.APIService); ok && s.Spec.Service != nil {
		c.queue.Add(s.Name)
	}
}

// enqueueLocated queues the APIServices whose service the ServiceLocation
// obj locates.
func (c *Controller) enqueueLocated(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	services, err := c.apiService.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, s := range services {
		if ref := s.Spec.Service; ref != nil && validation.ServiceLocationName(ref.Namespace, ref.Name) == key {
			c.queue.Add(s.Name)
		}
	}
}

// Run checks APIServices with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.V(1).Info("Starting the remote APIService availability controller")
	defer logger.V(1).Info("Stopped the remote APIService availability controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("APIService unavailable; checking again", "apiservice", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync sets the Available condition of the APIService named key from what
// its service reference resolves to and whether the server there answers
// discovery. An APIService that is unavailable is an error, so it is
// checked again soon, with backoff.
func (c *Controller) sync(ctx context.Context, key string) error {
	original, err := c.apiService.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if original.Spec.Service == nil {
		// A local APIService: upstream's local controller's.
		return nil
	}
	condition, checkErr := c.check(ctx, original)
	condition.Type = apiregistrationv1.Available
	condition.LastTransitionTime = metav1.Now()
	apiService := original.DeepCopy()
	apiregistrationv1helper.SetAPIServiceCondition(apiService, condition)
	if !apiequality.Semantic.DeepEqual(original.Status, apiService.Status) {
		if _, err := c.client.APIServices().UpdateStatus(ctx, apiService, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the status of APIService %s: %w", key, err)
		}
	}
	return checkErr
}

// check returns the Available condition of apiService, and when it is not
// true, why.
func (c *Controller) check(ctx context.Context, apiService *apiregistrationv1.APIService) (apiregistrationv1.APIServiceCondition, error) {
	ref := apiService.Spec.Service
	port := ptr.Deref(ref.Port, 443)
	unavailable := func(reason string, err error) (apiregistrationv1.APIServiceCondition, error) {
		return apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionFalse, Reason: reason, Message: err.Error()}, err
	}
	location, err := c.locator.Locate(ref.Namespace, ref.Name, port)
	switch {
	case errors.Is(err, serviceresolver.ErrPortNotLocated):
		return unavailable(ReasonServicePortError, err)
	case err != nil:
		return apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionUnknown, Reason: ReasonServiceAccessError, Message: err.Error()}, err
	}
	if err := c.checkDiscovery(ctx, apiService, location.URL); err != nil {
		if dnsErr := (*net.DNSError)(nil); location.By == "" && errors.As(err, &dnsErr) {
			locationName := validation.ServiceLocationName(ref.Namespace, ref.Name)
			return unavailable(ReasonServiceNotFound, fmt.Errorf("no ServiceLocation %s locates service %s/%s, and %s does not resolve: create a ServiceLocation named %s with the address and ports of the server",
				locationName, ref.Namespace, ref.Name, dnsErr.Name, locationName))
		}
		return unavailable(ReasonFailedDiscoveryCheck, err)
	}
	return apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionTrue, Reason: ReasonPassed, Message: "all checks passed"}, nil
}

// discoveryAttempts is how many discovery requests one check sends at
// once, as upstream's: the server is available when any is answered, so a
// connection lost once does not mark it unavailable, and with it every
// request the aggregator would proxy there.
const discoveryAttempts = 5

// checkDiscovery asks the server at location for the discovery document of
// the APIService's group version, as the aggregator would proxy it: with
// the front-proxy client certificate, checking the server's certificate
// against the APIService's CA bundle for NAME.NAMESPACE.svc. It sends
// discoveryAttempts requests at once and succeeds when one does.
func (c *Controller) checkDiscovery(ctx context.Context, apiService *apiregistrationv1.APIService, location *url.URL) error {
	var cert, key []byte
	if c.proxyCertKey != nil {
		cert, key = c.proxyCertKey()
	}
	rt, err := transport.New(remote.BuildTransportConfig(c.dial, cert, key, apiService))
	if err != nil {
		return fmt.Errorf("building the transport to APIService %s: %w", apiService.Name, err)
	}
	client := &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	u := *location
	u.Path = "/apis/" + apiService.Spec.Group + "/" + apiService.Spec.Version
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	results := make(chan error, discoveryAttempts)
	for range discoveryAttempts {
		go func() { results <- getDiscovery(ctx, client, u.String()) }()
	}
	var lastErr error
	for range discoveryAttempts {
		if lastErr = <-results; lastErr == nil {
			// The others are cut short by cancel, and their
			// results dropped into the buffered channel.
			return nil
		}
	}
	utilnet.CloseIdleConnectionsFor(rt)
	return lastErr
}

// getDiscovery sends one discovery request to discoveryURL.
func getDiscovery(ctx context.Context, client *http.Client, discoveryURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, discoveryURL, nil)
	if err != nil {
		return err
	}
	// As upstream: an identity the server lets read discovery whatever
	// its authorization.
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("failing or missing response from %s: %w", discoveryURL, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return fmt.Errorf("bad status from %s: %d", discoveryURL, resp.StatusCode)
	}
	return nil
}
