package logging

import (
	"os"

	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// ValidateAndApply validates the logging configuration c and applies it, as
// logsapi.ValidateAndApply does, with the logger writing through a Filter
// to the usual streams (stderr; stdout for informational messages with
// --log-text-split-stream). It returns a function that writes the counts
// the filters hold; call it before the process exits.
func ValidateAndApply(c *logsapi.LoggingConfiguration, featureGate featuregate.FeatureGate) (flush func(), err error) {
	stderr, stdout := NewFilter(os.Stderr, c), NewFilter(os.Stdout, c)
	if err := logsapi.ValidateAndApplyWithOptions(c, &logsapi.LoggingOptions{ErrorStream: stderr, InfoStream: stdout}, featureGate); err != nil {
		return nil, err
	}
	return func() {
		stderr.Flush()
		stdout.Flush()
	}, nil
}
