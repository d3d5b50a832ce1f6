package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

const (
	// AdminUser is the user name of the admin kubeconfig's certificate.
	AdminUser = "admin"
	// AdminGroup grants the admin kubeconfig every permission.
	AdminGroup = "system:masters"

	contextName = "sample-generic-controlplane"
)

// EnsureAdminKubeconfig writes a kubeconfig at path that reaches serverURL,
// verifies the server against the PKI's CA and authenticates as AdminUser in
// AdminGroup. The client certificate of an existing file is reused while the
// CA still vouches for it, so a kubeconfig copied elsewhere keeps working
// across restarts. The file is written with mode 0600.
func EnsureAdminKubeconfig(path, serverURL string, pki *PKI) error {
	certPEM, keyPEM, err := reusableAdminCredentials(path, pki.CA)
	if err != nil {
		return err
	}
	if certPEM == nil {
		if certPEM, keyPEM, err = pki.CA.IssueClientCertificate(AdminUser, []string{AdminGroup}); err != nil {
			return fmt.Errorf("issuing admin client certificate: %w", err)
		}
	}
	data, err := kubeconfig(serverURL, pki.CA, AdminUser, certPEM, keyPEM)
	if err != nil {
		return err
	}
	if existing, err := os.ReadFile(path); err == nil && string(existing) == string(data) {
		return nil
	}
	return atomicfile.Write(path, data, 0o600)
}

// UserKubeconfig returns a kubeconfig that reaches serverURL, verifies the
// server against ca and authenticates as user in groups with a new client
// certificate that ca issues for validity (IssueClientCertificateValidFor).
// Such a user may do nothing until an RBAC binding names it or one of its
// groups.
func UserKubeconfig(serverURL string, ca *Authority, user string, groups []string, validity time.Duration) ([]byte, error) {
	certPEM, keyPEM, err := ca.IssueClientCertificateValidFor(user, groups, validity)
	if err != nil {
		return nil, fmt.Errorf("issuing a client certificate for %q: %w", user, err)
	}
	return kubeconfig(serverURL, ca, user, certPEM, keyPEM)
}

// kubeconfig encodes a kubeconfig of one cluster, serverURL verified
// against ca, and one user with a client certificate.
func kubeconfig(serverURL string, ca *Authority, user string, certPEM, keyPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: ca.CertPEM()}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: user}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return data, nil
}

// reusableAdminCredentials returns the client certificate and key of the
// kubeconfig at path when ca signed it for the admin and it is not close to
// expiry; nil when there is none to reuse.
func reusableAdminCredentials(path string, ca *Authority) (certPEM, keyPEM []byte, err error) {
	existing, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	auth := existing.AuthInfos[AdminUser]
	if auth == nil || len(auth.ClientCertificateData) == 0 || len(auth.ClientKeyData) == 0 {
		return nil, nil, nil
	}
	certs, err := certutil.ParseCertsPEM(auth.ClientCertificateData)
	if err != nil || len(certs) == 0 {
		return nil, nil, nil
	}
	spec := leafSpec{commonName: AdminUser, organization: []string{AdminGroup}, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if !ca.stillValid(certs[0], spec) {
		return nil, nil, nil
	}
	return auth.ClientCertificateData, auth.ClientKeyData, nil
}
