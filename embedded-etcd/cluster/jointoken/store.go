package jointoken

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SecretType is the type of the Secrets that hold join tokens. A Secret of
// another type is not a token, whatever its name.
const SecretType corev1.SecretType = "sample-generic-controlplane.io/join-token"

const (
	// secretPrefix and the ID name a token's Secret in kube-system.
	secretPrefix = "join-token-"
	// tokenLabel marks the Secrets of tokens, so that List reads only those.
	tokenLabel = "sample-generic-controlplane.io/join-token"

	// The keys of a token's Secret. The secret itself is never stored:
	// only its hash, so that reading Secrets does not give away tokens.
	keyID          = "token-id"
	keySecretHash  = "secret-hash"
	keyExpiration  = "expiration"
	keyUsages      = "usages"
	keySingleUse   = "single-use"
	keyDescription = "description"

	// createAttempts bounds the retries when a random ID is taken.
	createAttempts = 5
)

// ErrInvalid is wrapped by the errors of Use for a token that may not be
// used: unknown, wrong secret, expired, for another usage, or used already.
var ErrInvalid = errors.New("invalid join token")

// errUnknown is the one answer for an unknown ID and a wrong secret, so
// that a caller cannot find out which IDs exist.
var errUnknown = fmt.Errorf("%w: unknown token ID or wrong secret", ErrInvalid)

// KnownUsages are the usages a token may have.
func KnownUsages() []string { return []string{UsageJoin} }

// CreateOptions are what Store.Create makes a token for.
type CreateOptions struct {
	// TTL is how long the token lasts. It must be positive: a token that
	// never expires is an admin's forgotten credential.
	TTL time.Duration
	// Usages are what the token may be used for (KnownUsages);
	// [UsageJoin] when empty.
	Usages []string
	// SingleUse makes the token's first use (Store.Use) its last.
	SingleUse bool
	// Description says what the token is for, e.g. "node-2".
	Description string
}

// Info is what is known of a stored token: everything but its secret.
type Info struct {
	ID               string
	Created, Expires time.Time
	Usages           []string
	SingleUse        bool
	Description      string
}

// Expired reports whether the token has expired at now.
func (i Info) Expired(now time.Time) bool {
	return !now.Before(i.Expires)
}

// Store keeps join tokens in Secrets of kube-system.
type Store struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
}

// NewStore returns the store of the join tokens of the cluster client
// writes to.
func NewStore(client kubernetes.Interface) *Store {
	return &Store{client: client, clock: clock.RealClock{}}
}

func (s *Store) secrets() corev1client.SecretInterface {
	return s.client.CoreV1().Secrets(metav1.NamespaceSystem)
}

// Create makes a token for the cluster whose CA has the hash caHash
// (CAHash), stores its hash and returns it, with its Info. On the way it
// deletes the tokens that have expired (best effort: a failure there does
// not fail Create).
func (s *Store) Create(ctx context.Context, caHash string, o CreateOptions) (Token, Info, error) {
	if !validCAHash(caHash) {
		return Token{}, Info{}, fmt.Errorf("join token: CA hash %q is not sha256: and 64 lower-case hex digits; compute it with CAHash", caHash)
	}
	o, err := o.complete()
	if err != nil {
		return Token{}, Info{}, err
	}
	s.deleteExpired(ctx)

	now := s.clock.Now()
	info := Info{
		Expires:     now.Add(o.TTL).Truncate(time.Second),
		Usages:      o.Usages,
		SingleUse:   o.SingleUse,
		Description: o.Description,
	}
	for range createAttempts {
		token := Token{CAHash: caHash, ID: randomString(idLength), Secret: randomString(secretLength)}
		info.ID = token.ID
		created, err := s.secrets().Create(ctx, newSecret(token, info), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// One in 36^6: draw another ID.
			continue
		}
		if err != nil {
			return Token{}, Info{}, fmt.Errorf("storing join token %s in secret %s/%s: %w", token.ID, metav1.NamespaceSystem, secretName(token.ID), err)
		}
		info.Created = created.CreationTimestamp.Time
		if info.Created.IsZero() {
			info.Created = now
		}
		return token, info, nil
	}
	return Token{}, Info{}, fmt.Errorf("storing a join token: %d random IDs were all taken; delete unused tokens (token list, token delete)", createAttempts)
}

// complete fills in the defaults and checks the options.
func (o CreateOptions) complete() (CreateOptions, error) {
	if o.TTL <= 0 {
		return o, fmt.Errorf("join token: TTL must be positive, e.g. 1h; got %s", o.TTL)
	}
	if len(o.Usages) == 0 {
		o.Usages = []string{UsageJoin}
	}
	for _, u := range o.Usages {
		if !slices.Contains(KnownUsages(), u) {
			return o, fmt.Errorf("join token: unknown usage %q; known usages: %s", u, strings.Join(KnownUsages(), ", "))
		}
	}
	o.Usages = slices.Compact(slices.Sorted(slices.Values(o.Usages)))
	return o, nil
}

// List returns the stored tokens, by ID, expired ones included.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	list, err := s.secrets().List(ctx, metav1.ListOptions{LabelSelector: tokenLabel})
	if err != nil {
		return nil, fmt.Errorf("listing join tokens (secrets in %s): %w", metav1.NamespaceSystem, err)
	}
	var infos []Info
	for i := range list.Items {
		secret := &list.Items[i]
		if !isToken(secret) {
			continue
		}
		info, err := infoOf(secret)
		if err != nil {
			klog.V(2).InfoS("Skipping a malformed join token", "secret", klog.KObj(secret), "err", err)
			continue
		}
		infos = append(infos, info)
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return infos, nil
}

// Delete deletes the token id.
func (s *Store) Delete(ctx context.Context, id string) error {
	if strings.Contains(id, ".") {
		// Not repeated: the secret follows the dot.
		return fmt.Errorf("join token ID: give the ID alone, the %d characters before the dot, not the token; list them with `sample-generic-controlplane token list`", idLength)
	}
	if !validPart(id, idLength) {
		return fmt.Errorf("join token ID %q: an ID is %d characters of a-z and 0-9, the part of the token before the dot; list them with `sample-generic-controlplane token list`", id, idLength)
	}
	secret, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	if secret == nil {
		return fmt.Errorf("join token %s not found; list them with `sample-generic-controlplane token list`", id)
	}
	// The UID makes sure it is the Secret just read (a token), not one of
	// another type created under the name since.
	err = s.secrets().Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("join token %s not found; list them with `sample-generic-controlplane token list`", id)
	}
	if err != nil {
		return fmt.Errorf("deleting join token %s: %w", id, err)
	}
	return nil
}

// Check checks that id and secret are those of a usable token for usage,
// without using it: a dry-run join. Its errors are Use's.
func (s *Store) Check(ctx context.Context, id, secret, usage string) (Info, error) {
	_, info, err := s.lookup(ctx, id, secret)
	if err != nil {
		return Info{}, err
	}
	if err := s.usable(info, usage); err != nil {
		return Info{}, err
	}
	return info, nil
}

// Use checks that id and secret are those of a token for usage, and uses
// it up if it is single-use: it deletes its Secret with preconditions on
// UID and resourceVersion, so that of concurrent uses exactly one
// succeeds. A token that cannot be used gives an error that wraps
// ErrInvalid and says why; an unknown ID and a wrong secret give the same
// one. An expired token is deleted on the way.
func (s *Store) Use(ctx context.Context, id, secret, usage string) (Info, error) {
	stored, info, err := s.lookup(ctx, id, secret)
	if err != nil {
		return Info{}, err
	}
	if info.Expired(s.clock.Now()) {
		s.deleteToken(ctx, stored)
	}
	if err := s.usable(info, usage); err != nil {
		return Info{}, err
	}
	if !info.SingleUse {
		return info, nil
	}
	err = s.secrets().Delete(ctx, stored.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID: &stored.UID, ResourceVersion: &stored.ResourceVersion,
	}})
	// Gone, or changed since it was read: another use came first.
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return Info{}, fmt.Errorf("%w: single-use token %s has been used already", ErrInvalid, id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("using single-use join token %s: %w", id, err)
	}
	return info, nil
}

// lookup reads the token id and checks its secret. It returns the
// token's Secret and Info.
func (s *Store) lookup(ctx context.Context, id, secret string) (*corev1.Secret, Info, error) {
	if !validPart(id, idLength) || !validPart(secret, secretLength) {
		return nil, Info{}, errUnknown
	}
	stored, err := s.get(ctx, id)
	if err != nil {
		return nil, Info{}, err
	}
	if stored == nil || !secretMatches(stored, secret) {
		return nil, Info{}, errUnknown
	}
	info, err := infoOf(stored)
	if err != nil {
		return nil, Info{}, fmt.Errorf("%w: token %s is malformed: %w", ErrInvalid, id, err)
	}
	return stored, info, nil
}

// usable checks that the token has not expired and is for usage.
func (s *Store) usable(info Info, usage string) error {
	if info.Expired(s.clock.Now()) {
		return fmt.Errorf("%w: token %s expired at %s", ErrInvalid, info.ID, info.Expires.UTC().Format(time.RFC3339))
	}
	if !slices.Contains(info.Usages, usage) {
		return fmt.Errorf("%w: token %s is not for %q (its usages: %s)", ErrInvalid, info.ID, usage, strings.Join(info.Usages, ","))
	}
	return nil
}

// get reads the Secret of token id: nil when there is none, or only a
// Secret of another type.
func (s *Store) get(ctx context.Context, id string) (*corev1.Secret, error) {
	secret, err := s.secrets().Get(ctx, secretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading join token %s: %w", id, err)
	}
	if !isToken(secret) {
		return nil, nil
	}
	return secret, nil
}

// deleteExpired deletes the tokens that have expired, best effort.
func (s *Store) deleteExpired(ctx context.Context) {
	list, err := s.secrets().List(ctx, metav1.ListOptions{LabelSelector: tokenLabel})
	if err != nil {
		klog.V(2).InfoS("Not deleting expired join tokens", "err", err)
		return
	}
	now := s.clock.Now()
	for i := range list.Items {
		secret := &list.Items[i]
		if !isToken(secret) {
			continue
		}
		if info, err := infoOf(secret); err == nil && info.Expired(now) {
			s.deleteToken(ctx, secret)
		}
	}
}

// deleteToken deletes an expired token's Secret, best effort: it is of no
// use any more, and only the same Secret (its UID) is deleted.
func (s *Store) deleteToken(ctx context.Context, secret *corev1.Secret) {
	err := s.secrets().Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.V(2).InfoS("Not deleting an expired join token", "secret", klog.KObj(secret), "err", err)
	}
}

func secretName(id string) string { return secretPrefix + id }

func isToken(secret *corev1.Secret) bool {
	return secret.Type == SecretType && secret.Namespace == metav1.NamespaceSystem
}

// newSecret is the Secret that stores token, as info describes it.
func newSecret(token Token, info Info) *corev1.Secret {
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      secretName(token.ID),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{tokenLabel: "true"},
		},
		Type: SecretType,
		// Nothing changes a token once it is made.
		Immutable: &immutable,
		Data: map[string][]byte{
			keyID:          []byte(token.ID),
			keySecretHash:  []byte(hashSecret(token.Secret)),
			keyExpiration:  []byte(info.Expires.UTC().Format(time.RFC3339)),
			keyUsages:      []byte(strings.Join(info.Usages, ",")),
			keySingleUse:   []byte(strconv.FormatBool(info.SingleUse)),
			keyDescription: []byte(info.Description),
		},
	}
}

// infoOf reads a token's Secret.
func infoOf(secret *corev1.Secret) (Info, error) {
	data := secret.Data
	id := string(data[keyID])
	if secretName(id) != secret.Name {
		return Info{}, fmt.Errorf("%s %q does not match the secret's name %s", keyID, id, secret.Name)
	}
	expires, err := time.Parse(time.RFC3339, string(data[keyExpiration]))
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", keyExpiration, err)
	}
	singleUse, err := strconv.ParseBool(string(data[keySingleUse]))
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", keySingleUse, err)
	}
	var usages []string
	if u := string(data[keyUsages]); u != "" {
		usages = strings.Split(u, ",")
	}
	return Info{
		ID:          id,
		Created:     secret.CreationTimestamp.Time,
		Expires:     expires,
		Usages:      usages,
		SingleUse:   singleUse,
		Description: string(data[keyDescription]),
	}, nil
}

// hashSecret is what is stored of a secret: its SHA-256, in hex. The
// secret is 32 random characters (165 bits), so a plain hash cannot be
// reversed by guessing, and needs no salt nor a slow hash.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// secretMatches compares the hash of secret with the stored one in
// constant time, so that timing tells nothing of the stored hash.
func secretMatches(stored *corev1.Secret, secret string) bool {
	return subtle.ConstantTimeCompare(stored.Data[keySecretHash], []byte(hashSecret(secret))) == 1
}
