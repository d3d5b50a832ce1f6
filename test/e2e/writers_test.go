package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
)

const (
	// writeTimeout bounds each create of the writers: a request that a
	// crash leaves unanswered fails and is tried again.
	writeTimeout = 10 * time.Second
	// writeRetryDelay is how long a writer waits after a failed create, so
	// that 32 writers facing a control plane that is down do not spin.
	writeRetryDelay = 50 * time.Millisecond
)

// configMapWriters create ConfigMaps in one namespace from many goroutines
// until stopped, as the clients of a control plane do, and record every
// create the server acknowledged. A create that fails is tried again under
// the same name, so that AlreadyExists tells of a write stored whose answer
// was lost.
type configMapWriters struct {
	cs kubernetes.Interface
	ns string

	mu sync.Mutex
	// acked holds the resourceVersion of each acknowledged create, by name.
	acked map[string]int64
	// failures counts failed creates; errors keeps the first of each kind.
	failures int
	errors   []string
	// notify is closed and replaced on every acknowledged create.
	notify chan struct{}

	// stopping is closed to stop the writers; a create in flight is
	// finished, not cancelled, so that its answer is not lost.
	stopping chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// startConfigMapWriters starts n writers into namespace ns of c, which it
// creates. They stop when the test ends, if not before.
func startConfigMapWriters(t *testing.T, c *Cluster, ns string, n int) *configMapWriters {
	t.Helper()
	cs := clientset(t, c)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	w := &configMapWriters{cs: cs, ns: ns, acked: map[string]int64{}, notify: make(chan struct{}), stopping: make(chan struct{})}
	for i := range n {
		w.wg.Go(func() { w.write(i) })
	}
	t.Cleanup(w.stop)
	return w
}

func (w *configMapWriters) write(writer int) {
	cms := w.cs.CoreV1().ConfigMaps(w.ns)
	for seq := 0; ; {
		select {
		case <-w.stopping:
			return
		default:
		}
		name := fmt.Sprintf("w%02d-%06d", writer, seq)
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"seq": fmt.Sprint(seq)}}, metav1.CreateOptions{})
		cancel()
		switch {
		case err == nil:
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64) // etcd's revision
			w.ack(name, rv)
			seq++
		case apierrors.IsAlreadyExists(err):
			// Stored by an attempt whose answer was lost: not
			// acknowledged, so not counted, and not written again.
			seq++
		default:
			w.fail(err)
			select {
			case <-w.stopping:
			case <-time.After(writeRetryDelay):
			}
		}
	}
}

func (w *configMapWriters) ack(name string, resourceVersion int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked[name] = resourceVersion
	close(w.notify)
	w.notify = make(chan struct{})
}

// maxErrorKinds bounds the kinds of error the writers keep for the log.
const maxErrorKinds = 8

var (
	// writerName matches the names the writers give their ConfigMaps.
	writerName = regexp.MustCompile(`w\d{2}-\d{6}`)
	// portInMessage matches the ports in a message, which differ from one
	// connection to the next.
	portInMessage = regexp.MustCompile(`:\d+\b`)
)

func (w *configMapWriters) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures++
	// One of each kind: the message without the object's name.
	kind := portInMessage.ReplaceAllString(writerName.ReplaceAllString(err.Error(), "<name>"), ":<port>")
	if len(w.errors) < maxErrorKinds && !slices.Contains(w.errors, kind) {
		w.errors = append(w.errors, kind)
	}
}

// acknowledged returns the creates acknowledged so far: the
// resourceVersion of each, by name.
func (w *configMapWriters) acknowledged() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.acked)
}

// waitForAcks waits until n more creates than now are acknowledged.
func (w *configMapWriters) waitForAcks(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		got, notify := len(w.acked), w.notify
		w.mu.Unlock()
		if got >= want {
			return
		}
		select {
		case <-notify:
		case <-deadline.C:
			_, kinds := w.failed()
			t.Fatalf("the writers had %d of %d more creates acknowledged after %s; their errors: %q", n-(want-got), n, timeout, kinds)
		}
	}
}

// failed returns how many creates failed, and one message of each kind.
func (w *configMapWriters) failed() (n int, kinds []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failures, slices.Clone(w.errors)
}

// stop stops the writers once their creates in flight are answered, and
// waits for them; it is safe to call more than once.
func (w *configMapWriters) stop() {
	w.stopOnce.Do(func() { close(w.stopping) })
	w.wg.Wait()
}

// checkAcknowledgedStored lists the writers' namespace on c and fails t
// for every acknowledged create it lacks. It returns how many creates were
// acknowledged, and how many more are stored: creates whose answer was
// lost (the request timed out, or the control plane died before it
// answered).
func (w *configMapWriters) checkAcknowledgedStored(t *testing.T, c *Cluster) (acked, unacked int) {
	t.Helper()
	// Acknowledged before the list begins, so stored before it reads.
	want := sets.KeySet(w.acknowledged())
	cfg := restConfig(t, c)
	cfg.Timeout = time.Minute
	list, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(w.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the writers' ConfigMaps: %v", err)
	}
	got := sets.New[string]()
	for _, cm := range list.Items {
		if writerName.MatchString(cm.Name) { // not kube-root-ca.crt
			got.Insert(cm.Name)
		}
	}
	if missing := want.Difference(got); missing.Len() > 0 {
		t.Errorf("%d of %d acknowledged creates are not stored, e.g. %v", missing.Len(), want.Len(), sets.List(missing)[:min(missing.Len(), 10)])
	}
	return want.Len(), got.Difference(want).Len()
}
