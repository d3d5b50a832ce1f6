package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// An admin issues a client certificate to a person through a CSR.
func TestApprovedClientCSRIsSignedAndAuthenticates(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "carol", Organization: []string{"devs"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	expiration := int32(3600)
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "carol"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: &expiration,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AdminApproved", Message: "approved by the test",
	})
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "carol", csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approve CSR: %v", err)
	}
	var certPEM []byte
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "carol", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		certPEM = got.Status.Certificate
		return len(certPEM) > 0, nil
	})
	if err != nil {
		t.Fatalf("approved CSR was never signed: %v", err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if lifetime := cert.NotAfter.Sub(cert.NotBefore); lifetime > 2*time.Hour {
		t.Errorf("certificate valid for %s although the CSR asked for 1h", lifetime)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	carol := rest.AnonymousClientConfig(s.ClientConfig)
	carol.CertData = certPEM
	carol.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	review, err := kubernetes.NewForConfigOrDie(carol).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticate with the signed certificate: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "carol" || !slices.Contains(u.Groups, "devs") {
		t.Fatalf("the signed certificate authenticates as %+v, want carol in devs", u)
	}
}
