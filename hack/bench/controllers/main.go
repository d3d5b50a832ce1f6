// Command controllers measures how long garbage collection of 1,000
// dependents and deletion of a namespace of 1,000 objects take with the
// in-process controllers, beside upstream kube-controller-manager (built from
// this module's graph,
// --controllers=garbage-collector-controller,namespace-controller) doing
// the same against the same API server. Medians of -runs runs.
//
//	go run ./hack/bench/controllers -binary bin/sample-generic-controlplane -kcm bin/anchor-kcm
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

const objects = 1000

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	kcm := flag.String("kcm", "bin/anchor-kcm", "kube-controller-manager binary")
	runs := flag.Int("runs", 5, "runs per figure; medians are reported")
	kcmArgs := flag.String("kcm-args", "", "extra kube-controller-manager flags, space-separated, e.g. \"--kube-api-qps=1000 --kube-api-burst=2000\"")
	flag.Parse()

	var ours, anchor results
	for i := range *runs {
		fmt.Fprintf(os.Stderr, "run %d/%d\n", i+1, *runs)
		if err := measure(*binary, "", nil, &ours); err != nil {
			benchutil.Fail(err)
		}
		if err := measure(*binary, *kcm, strings.Fields(*kcmArgs), &anchor); err != nil {
			benchutil.Fail(err)
		}
	}
	benchutil.Header(fmt.Sprintf("controllers, %d objects, median of %d runs (min-max), seconds; kube-controller-manager flags: %q", objects, *runs, *kcmArgs),
		"in-process", "kube-controller-manager")
	benchutil.Row("collect dependents of a deleted owner", ours.gc, anchor.gc, benchutil.Seconds)
	benchutil.Row("delete a namespace of objects", ours.namespace, anchor.namespace, benchutil.Seconds)
}

type results struct{ gc, namespace []float64 }

// measure starts a fresh control plane; with kcm set, it runs no controllers
// in-process and kube-controller-manager runs them instead.
func measure(binary, kcm string, kcmArgs []string, r *results) error {
	dir, err := os.MkdirTemp("", "bench-controllers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	port, err := benchutil.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--data-dir=" + filepath.Join(dir, "data"), "--secure-port=" + strconv.Itoa(port)}
	if kcm != "" {
		args = append(args, "--controllers=")
	}
	cp, err := benchutil.Start(binary, args, filepath.Join(dir, "controlplane.log"))
	if err != nil {
		return err
	}
	defer cp.Stop() //nolint:errcheck
	if err := benchutil.WaitReady(port, cp, time.Minute); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	kubeconfig := filepath.Join(dir, "data", "admin.kubeconfig")
	if kcm != "" {
		m, err := benchutil.Start(kcm, append([]string{
			"--kubeconfig=" + kubeconfig, "--controllers=garbage-collector-controller,namespace-controller",
			"--use-service-account-credentials=true", "--leader-elect=false", "--secure-port=0",
		}, kcmArgs...), filepath.Join(dir, "kcm.log"))
		if err != nil {
			return err
		}
		defer m.Stop() //nolint:errcheck
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.QPS = -1
	client := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()

	// Warm up: the controllers have started and synced once a probe works.
	if _, err := collectDependents(ctx, client, "probe", 1); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	gc, err := collectDependents(ctx, client, "bench-gc", objects)
	if err != nil {
		return err
	}
	ns, err := deleteNamespace(ctx, client, "bench-ns", objects)
	if err != nil {
		return err
	}
	r.gc = append(r.gc, gc.Seconds())
	r.namespace = append(r.namespace, ns.Seconds())
	return nil
}

// collectDependents creates an owner with n dependents, deletes the owner
// and returns how long until the last dependent is gone.
func collectDependents(ctx context.Context, client kubernetes.Interface, ns string, n int) (time.Duration, error) {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	cms := client.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	err = createMany(n, func(i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dependent-%d", i), Labels: map[string]string{"bench": "dependent"}, OwnerReferences: []metav1.OwnerReference{ref},
		}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "bench=dependent"})
		return err == nil && len(list.Items) == 0, err
	})
	return time.Since(start), err
}

// deleteNamespace fills a namespace with n objects (configmaps and secrets),
// deletes it and returns how long until it is gone.
func deleteNamespace(ctx context.Context, client kubernetes.Interface, ns string, n int) (time.Duration, error) {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	err := createMany(n, func(i int) error {
		var err error
		if i%2 == 0 {
			_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		} else {
			_, err = client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%d", i)}}, metav1.CreateOptions{})
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	return time.Since(start), err
}

// createMany runs create(0..n-1) on 32 goroutines.
func createMany(n int, create func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := create(i); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
