package controlplane

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"os"
	"strings"
)

// apiServerID names this API server replica as upstream's
// genericapiserver.NewConfig does, "apiserver-" and a hash, but of the host
// name and the address the API is served on rather than of the host name
// alone: replicas on one host (an HA set-up on a laptop, test suites) get
// identities of their own, and a replica keeps its identity across
// restarts. The identity names the replica's identity Lease in kube-system,
// its peer-endpoint lease and its storage-version records.
func apiServerID(serving net.Addr) (string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("host name for the API server identity: %w", err)
	}
	return hashAPIServerID(hostname, serving.String()), nil
}

func hashAPIServerID(hostname, address string) string {
	// NUL is in neither a host name nor an address: the pair is unambiguous.
	hash := sha256.Sum256([]byte(hostname + "\x00" + address))
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash[:16]))
}
