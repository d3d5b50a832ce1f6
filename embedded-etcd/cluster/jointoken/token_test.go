package jointoken

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

// caPEM is a CA certificate made with openssl; caPEMHash is its hash as
// kubeadm's documentation computes --discovery-token-ca-cert-hash:
//
//	openssl x509 -in ca.crt -pubkey -noout | openssl pkey -pubin -outform der | sha256sum
const (
	caPEM = `-----BEGIN CERTIFICATE-----
MIIBjzCCATWgAwIBAgIUKnQ4Ut0wByvga89Ixbjvgf1L/QIwCgYIKoZIzj0EAwIw
HDEaMBgGA1UEAwwRam9pbnRva2VuLXRlc3QtY2EwIBcNMjYxMTI1MTY1NDIxWhgP
MjEyNjExMDExNjU0MjFaMBwxGjAYBgNVBAMMEWpvaW50b2tlbi10ZXN0LWNhMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEA8/vI1CjpwbYsDy8YsLX73tKpkpA32vd
ZZa573cz+6coUq9pvyFnBp2UaLn+V9JUFbJhU0O7cjlo2bSKpGhOJ6NTMFEwHQYD
VR0OBBYEFLZY9DOyEVLONUUJ0x4LmkkFyqXjMB8GA1UdIwQYMBaAFLZY9DOyEVLO
NUUJ0x4LmkkFyqXjMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIh
AMTp//QzQl8CvGgfQIN4bOD4wQfZVW0DA4BtwHRp0P4mAiAgEEZf+lX2W1FcTkHo
0bZ08I/PvOMjA8PXsDCPUEBykQ==
-----END CERTIFICATE-----
`
	caPEMHash = "sha256:f250bd6783d393be73648c7c796b25d6f00e87762ec3c88d79e5005ab85f945f"
)

func TestCAHash(t *testing.T) {
	block, _ := pem.Decode([]byte(caPEM))
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := CAHash(ca); got != caPEMHash {
		t.Errorf("CAHash: %s, want %s", got, caPEMHash)
	}
}

const (
	testID     = "k3x9q2"
	testSecret = "0123456789abcdefghijklmnopqrstuv"
)

func TestParseString(t *testing.T) {
	want := Token{CAHash: caPEMHash, ID: testID, Secret: testSecret}
	printed := "sgcp::" + caPEMHash + "::" + testID + "." + testSecret
	if got := want.String(); got != printed {
		t.Errorf("String: %s, want %s", got, printed)
	}
	if got := want.Credential(); got != testID+"."+testSecret {
		t.Errorf("Credential: %s", got)
	}
	for _, s := range []string{printed, " " + printed + "\n"} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q): %+v, %v; want %+v", s, got, err, want)
		}
	}
	// Random tokens round-trip too.
	for range 100 {
		tok := Token{CAHash: caPEMHash, ID: randomString(idLength), Secret: randomString(secretLength)}
		if got, err := Parse(tok.String()); err != nil || got != tok {
			t.Fatalf("Parse(%s): %+v, %v", tok, got, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const how = "get one with `sample-generic-controlplane token create`"
	hash := caPEMHash
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `does not begin with "sgcp::"`},
		{"credential alone", testID + "." + testSecret, `does not begin with "sgcp::"`},
		{"kubeadm token", "abcdef.0123456789abcdef", `does not begin with "sgcp::"`},
		{"no credential", "sgcp::" + hash, `no "::" after the CA hash`},
		{"short hash", "sgcp::sha256:abcd::" + testID + "." + testSecret, "the CA hash is not sha256: and 64 lower-case hex digits"},
		{"upper-case hash", "sgcp::" + strings.ToUpper(hash) + "::" + testID + "." + testSecret, "the CA hash is not"},
		{"other algorithm", "sgcp::sha512:" + hash[7:] + "::" + testID + "." + testSecret, "the CA hash is not"},
		{"no dot", "sgcp::" + hash + "::" + testID + testSecret, `no "." between the ID and the secret`},
		{"short ID", "sgcp::" + hash + "::k3x9q." + testSecret, "the ID is not 6 characters of a-z and 0-9"},
		{"upper-case ID", "sgcp::" + hash + "::K3X9Q2." + testSecret, "the ID is not 6 characters"},
		{"short secret", "sgcp::" + hash + "::" + testID + "." + testSecret[1:], "join token k3x9q2: the secret is not 32 characters of a-z and 0-9"},
		{"bad character in secret", "sgcp::" + hash + "::" + testID + "." + testSecret[1:] + "_", "the secret is not 32 characters"},
		{"trailing part", "sgcp::" + hash + "::" + testID + "." + testSecret + "::x", "the secret is not 32 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tc.in)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, how) {
				t.Errorf("Parse(%q): %q, want it to contain %q and %q", tc.in, msg, tc.want, how)
			}
			// The secret (or what may be one) is never repeated.
			if strings.Contains(msg, testSecret[1:]) {
				t.Errorf("Parse(%q): the error %q repeats the secret", tc.in, msg)
			}
		})
	}
}

func TestRandomString(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := randomString(secretLength)
		if !validPart(s, secretLength) {
			t.Fatalf("randomString: %q is not %d characters of the alphabet", s, secretLength)
		}
		if seen[s] {
			t.Fatalf("randomString: %q twice", s)
		}
		seen[s] = true
	}
}
