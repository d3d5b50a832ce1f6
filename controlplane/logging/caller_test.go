package logging_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/logging"
)

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Through klog as the binary configures it, the filter tells the control
// plane's messages (this test's) from the libraries' by who logs them, on
// both of klog's routes to the writer: structured and contextual logging,
// and klog's printf-style functions.
func TestFilterKnowsWhoLogs(t *testing.T) {
	var out syncBuffer
	c := logsapi.NewLoggingConfiguration()
	if err := logsapi.ValidateAndApplyWithOptions(c, &logsapi.LoggingOptions{ErrorStream: logging.NewFilter(&out, c), InfoStream: &out}, nil); err != nil {
		t.Fatal(err)
	}
	defer klog.Flush()

	klog.Background().Info("Own structured message")
	klog.Infof("Own %s message", "printf-style")
	// client-go logs both at V(0).
	cache.WaitForNamedCacheSync("test", nil, func() bool { return true })
	// A library's errors stay.
	utilruntime.HandleError(errors.New("library error"))
	klog.Flush()

	got := out.String()
	for _, want := range []string{"Own structured message", "Own printf-style message", "library error"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q is missing from the log:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"Waiting for caches to sync", "Caches are synced"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("client-go's %q is in the log at the default verbosity:\n%s", unwanted, got)
		}
	}
}
