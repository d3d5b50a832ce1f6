package logging

import (
	"os"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

func init() {
	// The logging configuration's own gates (e.g. LoggingBetaOptions), in
	// the gate the control plane's --feature-gates set, as
	// kube-apiserver's options register them.
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
}

// ValidateAndApply validates the logging configuration c and applies it, as
// logsapi.ValidateAndApply does, with the logger writing through a Filter
// to the usual streams (stderr; stdout for informational messages with
// --log-text-split-stream), and makes the API server's etcd clients, which
// log past klog, hold back their repeats (HoldEtcdClientRepeats). It
// returns a function that writes the counts the filters hold; call it
// before the process exits.
func ValidateAndApply(c *logsapi.LoggingConfiguration, featureGate featuregate.FeatureGate) (flush func(), err error) {
	stderr, stdout := NewFilter(os.Stderr, c), NewFilter(os.Stdout, c)
	if err := logsapi.ValidateAndApplyWithOptions(c, &logsapi.LoggingOptions{ErrorStream: stderr, InfoStream: stdout}, featureGate); err != nil {
		return nil, err
	}
	HoldEtcdClientRepeats()
	return func() {
		stderr.Flush()
		stdout.Flush()
	}, nil
}
