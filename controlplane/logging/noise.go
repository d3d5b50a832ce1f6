package logging

import "strings"

// startupNoise matches the warnings that upstream code logs on every clean
// start and that ask nothing of the user; an alarming line at every start
// teaches users to ignore alarming lines. They are shown from -v=2. Each
// has a cause outside this module: where the cause is ours, it is fixed
// instead of listed here.
var startupNoise = []func(message string) bool{
	// k8s.io/apiserver warns for every version of an API group that has
	// no resources, i.e. for every beta and alpha version that is off.
	// The groups of apiextensions-apiserver and kube-aggregator register
	// such versions themselves.
	func(message string) bool {
		return strings.HasPrefix(message, "Skipping API ") && strings.HasSuffix(message, " because it has no resources.")
	},
	// gRPC warns when a connection attempt fails, including one that the
	// etcd client abandoned itself: the etcd client (v3.6) configures its
	// load balancer in a second step, and gRPC then closes the connection
	// the first step opened. Closed or cancelled by this process, such an
	// attempt says nothing about etcd; a refused or timed-out one does,
	// and stays a warning.
	func(message string) bool {
		return strings.Contains(message, "grpc: addrConn.createTransport failed to connect") &&
			(strings.Contains(message, "use of closed network connection") || strings.Contains(message, "operation was canceled"))
	},
}

func isStartupNoise(message string) bool {
	for _, matches := range startupNoise {
		if matches(message) {
			return true
		}
	}
	return false
}
