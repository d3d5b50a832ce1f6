package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	certutil "k8s.io/client-go/util/cert"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// CheckCA checks that the CA certificate in file is the one the token
// pins (jointoken.Token.CAHash).
func CheckCA(file, caHash string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := CheckCAData(data, caHash); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// CheckCAData checks that the PEM CA certificate data is the one the token
// pins.
func CheckCAData(data []byte, caHash string) error {
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return fmt.Errorf("no CA certificate: %w", err)
	}
	if got := jointoken.CAHash(certs[0]); got != caHash {
		return fmt.Errorf("the CA's hash is %s, and the token pins %s", got, caHash)
	}
	return nil
}

// NewMemberName names a new member after the host, with a random suffix:
// servers on one host (and hosts of one name) stay apart.
func NewMemberName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "server"
	}
	host = strings.ToLower(strings.Split(host, ".")[0])
	if len(validation.IsDNS1123Label(host)) > 0 || len(host) > 40 {
		host = "server"
	}
	suffix := make([]byte, 4)
	rand.Read(suffix) //nolint:errcheck // never fails
	return host + "-" + hex.EncodeToString(suffix)
}
