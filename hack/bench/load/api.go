package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// payload is each ConfigMap's data: a small configuration file.
var payload = map[string]string{"config.yaml": strings.Repeat("key: value\n", 24)}

// The namespaces the figures create.
const (
	createsNamespace       = "bench-creates"
	sharedCreatesNamespace = "bench-creates-shared"
	listsNamespace         = "bench-lists"
	watchesNamespace       = "bench-watches"
)

var benchNamespaces = []string{createsNamespace, sharedCreatesNamespace, listsNamespace, watchesNamespace}

// settle is how long the controllers get, once one leads, to start and
// sync their informers before the load begins.
const settle = 3 * time.Second

// newClient is a client with its own connection, speaking protobuf as
// controllers do, and not throttled on the client side.
func newClient(config *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(config)
	c.QPS, c.Burst = -1, -1
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	// A transport of its own: client-go shares one between identical
	// configurations, so every client would multiplex one HTTP/2
	// connection. A dialer of its own makes the configuration unique.
	c.Dial = (&net.Dialer{}).DialContext
	return kubernetes.NewForConfig(c)
}

// waitForControllers waits until the controllers run — the root CA
// publisher has written the CA into the default namespace, in both stacks —
// then lets them settle.
func waitForControllers(ctx context.Context, config *rest.Config) error {
	client, err := newClient(config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controllers to publish ConfigMap default/kube-root-ca.crt: %w", err)
	}
	time.Sleep(settle)
	return nil
}

// createNamespace creates a namespace and waits for the root CA publisher
// to add its ConfigMap, so that it is not written during a measurement.
func createNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps(name).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		return err == nil, nil
	})
}

// rootCAConfigMap is what the root CA publisher writes into every namespace.
const rootCAConfigMap = "kube-root-ca.crt"

type createResult struct {
	perSecond float64
	latencies []time.Duration
}

// sharedClient is one client as a controller has it: client-go's defaults
// (JSON, one HTTP/2 connection that every request multiplexes), not
// throttled on the client side.
func sharedClient(config *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(config)
	c.QPS, c.Burst = -1, -1
	return kubernetes.NewForConfig(c)
}

// createShape is how the create load reaches the server.
type createShape int

const (
	// ownConnections: o.clients clients, each with its own connection,
	// speaking protobuf; many clients of one server.
	ownConnections createShape = iota
	// oneClient: o.clients workers sharing one client (JSON, one HTTP/2
	// connection); one busy controller.
	oneClient
)

func (s createShape) String() string {
	if s == oneClient {
		return "one-client"
	}
	return "connections"
}

// measureCreates has o.clients workers create ConfigMaps in one namespace
// for o.duration, shaped as shape says.
func measureCreates(ctx context.Context, config *rest.Config, o options, shape createShape) (createResult, error) {
	clients := make([]*kubernetes.Clientset, o.clients)
	ns := createsNamespace
	if shape == oneClient {
		ns = sharedCreatesNamespace
		shared, err := sharedClient(config)
		if err != nil {
			return createResult{}, err
		}
		for i := range clients {
			clients[i] = shared
		}
	}
	for i := range clients {
		if clients[i] != nil {
			continue
		}
		var err error
		if clients[i], err = newClient(config); err != nil {
			return createResult{}, err
		}
	}
	if err := createNamespace(ctx, clients[0], ns); err != nil {
		return createResult{}, err
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		first     error
	)
	start := time.Now()
	deadline := start.Add(o.duration)
	for i, client := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for n := 0; time.Now().Before(deadline); n++ {
				t := time.Now()
				_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%d", i, n)},
					Data:       payload,
				}, metav1.CreateOptions{})
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return createResult{}, first
	}
	return createResult{perSecond: float64(len(latencies)) / elapsed.Seconds(), latencies: latencies}, nil
}

type listResult struct{ full, paged []time.Duration }

// measureLists fills a namespace with o.listObjects ConfigMaps (beside the
// root CA's), then lists
// it o.lists times whole and o.lists times in pages of 500. The lists are
// consistent reads (no resourceVersion), as a client that must see its own
// writes asks.
func measureLists(ctx context.Context, config *rest.Config, o options) (listResult, error) {
	client, err := newClient(config)
	if err != nil {
		return listResult{}, err
	}
	ns := listsNamespace
	if err := createNamespace(ctx, client, ns); err != nil {
		return listResult{}, err
	}
	if err := fill(ctx, config, ns, o.listObjects, o.clients); err != nil {
		return listResult{}, err
	}
	var r listResult
	for range o.lists {
		t := time.Now()
		list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return r, err
		}
		r.full = append(r.full, time.Since(t))
		if len(list.Items) != o.listObjects+1 {
			return r, fmt.Errorf("listed %d ConfigMaps, want %d", len(list.Items), o.listObjects+1)
		}

		t = time.Now()
		n, opts := 0, metav1.ListOptions{Limit: 500}
		for {
			page, err := client.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return r, err
			}
			n += len(page.Items)
			if opts.Continue = page.Continue; opts.Continue == "" {
				break
			}
		}
		r.paged = append(r.paged, time.Since(t))
		if n != o.listObjects+1 {
			return r, fmt.Errorf("listed %d ConfigMaps in pages, want %d", n, o.listObjects+1)
		}
	}
	return r, nil
}

// fill creates n ConfigMaps in ns with the given number of clients.
func fill(ctx context.Context, config *rest.Config, ns string, n, clients int) error {
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		client, err := newClient(config)
		if err != nil {
			return err
		}
		wg.Go(func() {
			for i := range next {
				_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l-%d", i)},
					Data:       payload,
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// measureWatches opens o.watchers watches of one namespace, then updates its
// ten ConfigMaps round robin o.updates times from one client, and returns
// for every event each watcher received the time from the start of the
// update's request to the event's arrival.
func measureWatches(ctx context.Context, config *rest.Config, o options) ([]time.Duration, error) {
	client, err := newClient(config)
	if err != nil {
		return nil, err
	}
	ns := watchesNamespace
	if err := createNamespace(ctx, client, ns); err != nil {
		return nil, err
	}
	cms := make([]*corev1.ConfigMap, 10)
	for i := range cms {
		if cms[i], err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i)},
			Data:       payload,
		}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	// The watches share one connection, as a process's informers do.
	watchClient, err := newClient(config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	type arrival struct {
		rv string
		at time.Time
	}
	arrivals := make([][]arrival, o.watchers)
	done := make(chan error, o.watchers)
	for i := range o.watchers {
		w, err := watchClient.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cms[len(cms)-1].ResourceVersion})
		if err != nil {
			return nil, fmt.Errorf("watch %d: %w", i, err)
		}
		go func() {
			defer w.Stop()
			for e := range w.ResultChan() {
				if e.Type != watch.Modified {
					done <- fmt.Errorf("watch %d: unexpected %s event: %v", i, e.Type, e.Object)
					return
				}
				cm := e.Object.(*corev1.ConfigMap)
				arrivals[i] = append(arrivals[i], arrival{rv: cm.ResourceVersion, at: time.Now()})
				if len(arrivals[i]) == o.updates {
					done <- nil
					return
				}
			}
			done <- fmt.Errorf("watch %d ended after %d of %d events", i, len(arrivals[i]), o.updates)
		}()
	}

	sent := make(map[string]time.Time, o.updates)
	for n := range o.updates {
		cm := cms[n%len(cms)]
		cm.Data = map[string]string{"config.yaml": payload["config.yaml"], "n": fmt.Sprint(n)}
		t := time.Now()
		updated, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("update %d: %w", n, err)
		}
		sent[updated.ResourceVersion] = t
		cms[n%len(cms)] = updated
	}
	for range o.watchers {
		if err := <-done; err != nil {
			return nil, err
		}
	}
	var latencies []time.Duration
	for _, as := range arrivals {
		for _, a := range as {
			t, ok := sent[a.rv]
			if !ok {
				return nil, fmt.Errorf("an event at resourceVersion %s that no update wrote", a.rv)
			}
			latencies = append(latencies, a.at.Sub(t))
		}
	}
	return latencies, nil
}

// percentile p (0-100) of d, nearest rank.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// deleteNamespaces deletes the namespaces the figures create and waits until
// they are gone, so that the next run can create them again.
func deleteNamespaces(ctx context.Context, config *rest.Config) error {
	client, err := newClient(config)
	if err != nil {
		return err
	}
	for _, ns := range benchNamespaces {
		if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, ns := range benchNamespaces {
			if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}
