// Package jointoken is the join tokens of a control plane: short-lived
// credentials that let a new server join the cluster, and nothing more.
// A token pins the cluster's CA (as kubeadm's discovery token does), is
// stored as a hash in a Secret of kube-system, expires, and may be for a
// single use.
package jointoken

import (
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"strings"

	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
)

const (
	// UsageJoin is what a token is for: joining a server to the cluster.
	// It is the only usage today.
	UsageJoin = "join"
	// Group is the group every authenticated join token is in.
	Group = "system:join-tokens"
	// UserPrefix begins the user name of an authenticated token; the
	// token's ID follows.
	UserPrefix = "system:join-token:"
	// JoinPath is the non-resource URL that a join token may POST to.
	JoinPath = "/join/v1"
)

const (
	// prefix begins the printed form of a token, so that it is recognised
	// (and not mistaken for another credential) wherever it is pasted.
	prefix = "sgcp::"
	// separator separates the printed form's parts. The CA hash holds a
	// single colon ("sha256:…"), so a double one is unambiguous.
	separator    = "::"
	idLength     = 6
	secretLength = 32
	// alphabet is what IDs and secrets are made of: as bootstrap tokens,
	// lower-case letters and digits, safe in a shell, a URL and a name.
	alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	// caHashPrefix and caHashLength are those of CAHash's result.
	caHashPrefix = "sha256:"
	caHashLength = len(caHashPrefix) + 64
	// howToGet ends Parse's errors.
	howToGet = "a join token looks like sgcp::sha256:<64 hex digits>::<6-character ID>.<32-character secret>; " +
		"get one with `sample-generic-controlplane token create` on a server of the cluster"
)

// Token is a join token: the hash of the cluster CA's public key, which the
// joining server checks the cluster's serving certificate against, and the
// credential it presents, ID and secret.
type Token struct {
	CAHash, ID, Secret string
}

// String is the printed form, sgcp::<CA hash>::<ID>.<secret>: what an
// administrator hands to the joining server's --token.
func (t Token) String() string {
	return prefix + t.CAHash + separator + t.Credential()
}

// Credential is "<ID>.<secret>": what the joining server sends as
// "Authorization: Bearer".
func (t Token) Credential() string {
	return t.ID + "." + t.Secret
}

// Parse reads a token in its printed form. Its errors say which part is
// wrong and never repeat the secret.
func Parse(s string) (Token, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), prefix)
	if !ok {
		return Token{}, fmt.Errorf("not a join token: it does not begin with %q; %s", prefix, howToGet)
	}
	caHash, credential, ok := strings.Cut(rest, separator)
	if !ok {
		return Token{}, fmt.Errorf("not a join token: no %q after the CA hash; %s", separator, howToGet)
	}
	if !validCAHash(caHash) {
		return Token{}, fmt.Errorf("join token: the CA hash is not sha256: and 64 lower-case hex digits; %s", howToGet)
	}
	id, secret, ok := strings.Cut(credential, ".")
	if !ok {
		return Token{}, fmt.Errorf("join token: no \".\" between the ID and the secret; %s", howToGet)
	}
	if !validPart(id, idLength) {
		return Token{}, fmt.Errorf("join token: the ID is not %d characters of a-z and 0-9; %s", idLength, howToGet)
	}
	if !validPart(secret, secretLength) {
		return Token{}, fmt.Errorf("join token %s: the secret is not %d characters of a-z and 0-9; %s", id, secretLength, howToGet)
	}
	return Token{CAHash: caHash, ID: id, Secret: secret}, nil
}

// parseCredential splits "<ID>.<secret>", and reports whether it is a join
// token's credential at all.
func parseCredential(s string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(s, ".")
	return id, secret, ok && validPart(id, idLength) && validPart(secret, secretLength)
}

// CAHash is the hash a token pins its cluster's CA by: "sha256:" and the
// hex SHA-256 of the CA certificate's public key (its
// SubjectPublicKeyInfo), as kubeadm's --discovery-token-ca-cert-hash.
// It names the key, not the certificate, so a CA reissued with the same
// key keeps its hash.
func CAHash(ca *x509.Certificate) string {
	return pubkeypin.Hash(ca)
}

func validCAHash(s string) bool {
	if len(s) != caHashLength || !strings.HasPrefix(s, caHashPrefix) {
		return false
	}
	for _, c := range s[len(caHashPrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validPart reports whether s is n characters of the alphabet.
func validPart(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune(alphabet, c) {
			return false
		}
	}
	return true
}

// randomString returns n characters of the alphabet from crypto/rand,
// each equally likely: bytes at or above the largest multiple of the
// alphabet's size are drawn again rather than folded (which would favour
// the first letters).
func randomString(n int) string {
	const limit = 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		// crypto/rand.Read never fails (it crashes the program if the
		// system's source does).
		_, _ = rand.Read(buf)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}
