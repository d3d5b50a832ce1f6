package jointoken

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newFakeClient is a fake clientset that, as the API server, gives every
// object it creates a UID and a resourceVersion, and checks a delete's
// preconditions (the fake's tracker does neither). deletes records the
// preconditions of each delete.
func newFakeClient(t *testing.T, objects ...runtime.Object) (client *fake.Clientset, deletes func() []metav1.Preconditions) {
	t.Helper()
	var (
		mu      sync.Mutex
		rv      atomic.Int64
		deleted []metav1.Preconditions
	)
	for i, o := range objects {
		m, _ := o.(metav1.Object)
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
			m.SetResourceVersion(fmt.Sprint(rv.Add(1)))
		}
	}
	client = fake.NewClientset(objects...)
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		m, _ := action.(clienttesting.CreateAction).GetObject().(metav1.Object)
		n := rv.Add(1)
		m.SetUID(types.UID(fmt.Sprintf("uid-created-%d", n)))
		m.SetResourceVersion(fmt.Sprint(n))
		return false, nil, nil
	})
	client.PrependReactor("delete", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		del := action.(clienttesting.DeleteActionImpl)
		p := del.DeleteOptions.Preconditions
		if p == nil {
			p = &metav1.Preconditions{}
		}
		mu.Lock()
		deleted = append(deleted, *p)
		mu.Unlock()
		stored, err := client.Tracker().Get(del.GetResource(), del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		m, _ := stored.(metav1.Object)
		if p.UID != nil && *p.UID != m.GetUID() || p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(del.GetResource().GroupResource(), del.GetName(), errors.New("precondition failed"))
		}
		return false, nil, nil
	})
	return client, func() []metav1.Preconditions {
		mu.Lock()
		defer mu.Unlock()
		return append([]metav1.Preconditions(nil), deleted...)
	}
}

func newTestStore(t *testing.T, objects ...runtime.Object) (*Store, *clocktesting.FakePassiveClock, *fake.Clientset, func() []metav1.Preconditions) {
	client, deletes := newFakeClient(t, objects...)
	clock := clocktesting.NewFakePassiveClock(t0)
	return &Store{client: client, clock: clock}, clock, client, deletes
}

// storedSecret is a token's Secret as Create writes it.
func storedSecret(id, secret string, expires time.Time, usages string, singleUse bool) *corev1.Secret {
	s := newSecret(Token{ID: id, Secret: secret}, Info{Expires: expires, SingleUse: singleUse, Description: "test"})
	s.Data[keyUsages] = []byte(usages)
	return s
}

// foreignSecret is a Secret named as a token's, of another type.
func foreignSecret(id string) *corev1.Secret {
	s := storedSecret(id, testSecret, t0.Add(time.Hour), UsageJoin, false)
	s.Type = corev1.SecretTypeOpaque
	return s
}

func secretExists(t *testing.T, client *fake.Clientset, id string) bool {
	t.Helper()
	_, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(context.Background(), secretName(id), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	store, _, client, _ := newTestStore(t)
	token, info, err := store.Create(ctx, caPEMHash, CreateOptions{TTL: 90 * time.Minute, SingleUse: true, Description: "node-2"})
	if err != nil {
		t.Fatal(err)
	}
	if !validPart(token.ID, idLength) || !validPart(token.Secret, secretLength) || token.CAHash != caPEMHash {
		t.Errorf("token %+v is not a CA hash, a 6-character ID and a 32-character secret", token)
	}
	wantInfo := Info{ID: token.ID, Created: t0, Expires: t0.Add(90 * time.Minute), Usages: []string{UsageJoin}, SingleUse: true, Description: "node-2"}
	if fmt.Sprint(info) != fmt.Sprint(wantInfo) {
		t.Errorf("info %+v, want %+v", info, wantInfo)
	}

	secret, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "join-token-"+token.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != SecretType || secret.Labels[tokenLabel] != "true" || secret.Immutable == nil || !*secret.Immutable {
		t.Errorf("secret type %q, labels %v, immutable %v", secret.Type, secret.Labels, secret.Immutable)
	}
	want := map[string]string{
		"token-id":    token.ID,
		"secret-hash": hashSecret(token.Secret),
		"expiration":  "2026-03-01T13:30:00Z",
		"usages":      "join",
		"single-use":  "true",
		"description": "node-2",
	}
	if len(secret.Data) != len(want) {
		t.Errorf("secret data has keys %v, want those of %v", secret.Data, want)
	}
	for k, v := range want {
		if got := string(secret.Data[k]); got != v {
			t.Errorf("data[%s] = %q, want %q", k, got, v)
		}
	}
	for k, v := range secret.Data {
		if strings.Contains(string(v), token.Secret) {
			t.Errorf("data[%s] holds the secret", k)
		}
	}
}

func TestCreateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caHash string
		o      CreateOptions
		want   string
	}{
		{"zero TTL", caPEMHash, CreateOptions{}, "TTL must be positive, e.g. 1h; got 0s"},
		{"negative TTL", caPEMHash, CreateOptions{TTL: -time.Hour}, "TTL must be positive, e.g. 1h; got -1h0m0s"},
		{"unknown usage", caPEMHash, CreateOptions{TTL: time.Hour, Usages: []string{"join", "admin"}}, `unknown usage "admin"; known usages: join`},
		{"bad CA hash", "sha256:abc", CreateOptions{TTL: time.Hour}, `CA hash "sha256:abc" is not sha256: and 64 lower-case hex digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _, client, _ := newTestStore(t)
			_, _, err := store.Create(context.Background(), tc.caHash, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create: %v, want an error containing %q", err, tc.want)
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("Create made %d requests before refusing", n)
			}
		})
	}
}

// Create deletes the tokens that have expired, and nothing else.
func TestCreateDeletesExpired(t *testing.T) {
	store, _, client, _ := newTestStore(t,
		storedSecret("expird", testSecret, t0, UsageJoin, false),
		storedSecret("valid1", testSecret, t0.Add(time.Second), UsageJoin, false),
		foreignSecret("other1"),
	)
	if _, _, err := store.Create(context.Background(), caPEMHash, CreateOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"expird": false, "valid1": true, "other1": true} {
		if got := secretExists(t, client, id); got != want {
			t.Errorf("token %s exists: %t, want %t", id, got, want)
		}
	}
}

// A random ID already taken is drawn again.
func TestCreateRetriesATakenID(t *testing.T) {
	store, _, client, _ := newTestStore(t)
	taken := 0
	client.PrependReactor("create", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if taken < 2 {
			taken++
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "join-token-x")
		}
		return false, nil, nil
	})
	token, _, err := store.Create(context.Background(), caPEMHash, CreateOptions{TTL: time.Hour})
	if err != nil || !secretExists(t, client, token.ID) {
		t.Fatalf("Create after two taken IDs: %v", err)
	}
}

func TestList(t *testing.T) {
	malformed := storedSecret("broken", testSecret, t0, UsageJoin, false)
	malformed.Data[keyExpiration] = []byte("tomorrow")
	store, clock, _, _ := newTestStore(t,
		storedSecret("zzzzzz", testSecret, t0.Add(time.Hour), UsageJoin, true),
		storedSecret("aaaaaa", testSecret, t0, UsageJoin, false),
		foreignSecret("other1"),
		malformed,
	)
	infos, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range infos {
		got = append(got, fmt.Sprintf("%s %s %v %t %t", i.ID, i.Expires.Format(time.RFC3339), i.Usages, i.SingleUse, i.Expired(clock.Now())))
	}
	want := []string{
		"aaaaaa 2026-03-01T12:00:00Z [join] false true",
		"zzzzzz 2026-03-01T13:00:00Z [join] true false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDelete(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		// want is the error, "" for none.
		want string
	}{
		{name: "a token", id: "token1"},
		{name: "an expired token", id: "expird"},
		{name: "unknown", id: "nosuch", want: "join token nosuch not found; list them with `sample-generic-controlplane token list`"},
		{name: "a secret of another type", id: "other1", want: "join token other1 not found"},
		{name: "not an ID", id: "Token-1", want: `join token ID "Token-1": an ID is 6 characters of a-z and 0-9`},
		{name: "a credential", id: "token1." + testSecret, want: "join token ID: give the ID alone, the 6 characters before the dot, not the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _, client, deletes := newTestStore(t,
				storedSecret("token1", testSecret, t0.Add(time.Hour), UsageJoin, false),
				storedSecret("expird", testSecret, t0, UsageJoin, false),
				foreignSecret("other1"),
			)
			err := store.Delete(context.Background(), tc.id)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), testSecret) {
					t.Fatalf("Delete(%s): %v, want %q (and not the secret)", tc.id, err, tc.want)
				}
				if len(deletes()) != 0 {
					t.Errorf("Delete(%s) deleted something", tc.id)
				}
				return
			}
			if err != nil {
				t.Fatalf("Delete(%s): %v", tc.id, err)
			}
			if secretExists(t, client, tc.id) {
				t.Errorf("token %s still exists", tc.id)
			}
			if d := deletes(); len(d) != 1 || d[0].UID == nil {
				t.Errorf("Delete(%s) deleted with preconditions %v, want the UID's", tc.id, d)
			}
		})
	}
}

func TestUse(t *testing.T) {
	const other = "vutsrqponmlkjihgfedcba9876543210"
	for _, tc := range []struct {
		name                string
		id, secret, usage   string
		want                string // the error, "" for none
		wantSecretRemaining bool
	}{
		{name: "multi-use", id: "multi1", secret: testSecret, usage: UsageJoin, wantSecretRemaining: true},
		{name: "single-use", id: "single", secret: testSecret, usage: UsageJoin},
		{name: "wrong secret", id: "multi1", secret: other, usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret", wantSecretRemaining: true},
		{name: "unknown ID", id: "nosuch", secret: testSecret, usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret"},
		{name: "malformed ID", id: "NoSuch", secret: testSecret, usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret"},
		{name: "short secret", id: "multi1", secret: "x", usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret", wantSecretRemaining: true},
		{name: "a secret of another type", id: "other1", secret: testSecret, usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret", wantSecretRemaining: true},
		{name: "expired", id: "expird", secret: testSecret, usage: UsageJoin, want: "invalid join token: token expird expired at 2026-03-01T12:00:00Z"},
		{name: "expired, wrong secret", id: "expird", secret: other, usage: UsageJoin, want: "invalid join token: unknown token ID or wrong secret", wantSecretRemaining: true},
		{name: "wrong usage", id: "nousag", secret: testSecret, usage: UsageJoin, want: `invalid join token: token nousag is not for "join" (its usages: )`, wantSecretRemaining: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _, client, deletes := newTestStore(t,
				storedSecret("multi1", testSecret, t0.Add(time.Hour), UsageJoin, false),
				storedSecret("single", testSecret, t0.Add(time.Hour), UsageJoin, true),
				storedSecret("expird", testSecret, t0, UsageJoin, true),
				storedSecret("nousag", testSecret, t0.Add(time.Hour), "", false),
				foreignSecret("other1"),
			)
			info, err := store.Use(context.Background(), tc.id, tc.secret, tc.usage)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Use: %v", err)
			case tc.want == "" && info.ID != tc.id:
				t.Errorf("Use: info of %q, want %q", info.ID, tc.id)
			case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalid)):
				t.Fatalf("Use: %v, want %q wrapping ErrInvalid", err, tc.want)
			}
			if got := secretExists(t, client, tc.id); got != tc.wantSecretRemaining {
				t.Errorf("token %s exists after Use: %t, want %t", tc.id, got, tc.wantSecretRemaining)
			}
			if tc.id == "single" {
				d := deletes()
				if len(d) != 1 || d[0].UID == nil || d[0].ResourceVersion == nil {
					t.Errorf("single-use token deleted with preconditions %v, want UID and resourceVersion", d)
				}
			}
		})
	}
}

func TestUseSingleUseTwice(t *testing.T) {
	store, _, _, _ := newTestStore(t, storedSecret("single", testSecret, t0.Add(time.Hour), UsageJoin, true))
	ctx := context.Background()
	if _, err := store.Use(ctx, "single", testSecret, UsageJoin); err != nil {
		t.Fatal(err)
	}
	// Once used, it is gone: it is unknown from then on.
	_, err := store.Use(ctx, "single", testSecret, UsageJoin)
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unknown token ID or wrong secret") {
		t.Fatalf("second Use: %v", err)
	}
}

// Of concurrent uses of a single-use token, exactly one succeeds: each
// reads the token before any deletes it (barrierSecrets), so all of them
// find it valid, and only one delete finds it.
func TestUseSingleUseConcurrently(t *testing.T) {
	const uses = 8
	client, _ := newFakeClient(t, storedSecret("single", testSecret, t0.Add(time.Hour), UsageJoin, true))
	b := &barrierClient{Interface: client}
	b.read.Add(uses)
	store := &Store{client: b, clock: clocktesting.NewFakePassiveClock(t0)}
	var wg sync.WaitGroup
	errs := make([]error, uses)
	for i := range uses {
		wg.Go(func() { _, errs[i] = store.Use(context.Background(), "single", testSecret, UsageJoin) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "single-use token single has been used already"):
			t.Errorf("a losing Use: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent uses succeeded, want 1", won, uses)
	}
}

// barrierClient holds every delete of a Secret until read is done: the fake
// clientset runs one request at a time, under a lock, so its reactors
// cannot wait.
type barrierClient struct {
	kubernetes.Interface
	read sync.WaitGroup
}

func (c *barrierClient) CoreV1() corev1client.CoreV1Interface {
	return barrierCore{c.Interface.CoreV1(), c}
}

type barrierCore struct {
	corev1client.CoreV1Interface
	c *barrierClient
}

func (c barrierCore) Secrets(namespace string) corev1client.SecretInterface {
	return barrierSecrets{c.CoreV1Interface.Secrets(namespace), c.c}
}

type barrierSecrets struct {
	corev1client.SecretInterface
	c *barrierClient
}

func (s barrierSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	defer s.c.read.Done()
	return s.SecretInterface.Get(ctx, name, opts)
}

func (s barrierSecrets) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	s.c.read.Wait()
	return s.SecretInterface.Delete(ctx, name, opts)
}

// A token changed between the read and the delete (its resourceVersion)
// is not used: the delete's precondition fails.
func TestUseSingleUseChangedMeanwhile(t *testing.T) {
	store, _, client, _ := newTestStore(t, storedSecret("single", testSecret, t0.Add(time.Hour), UsageJoin, true))
	client.PrependReactor("get", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := client.Tracker().Get(action.GetResource(), action.GetNamespace(), action.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		stale := obj.DeepCopyObject().(*corev1.Secret)
		stale.ResourceVersion = "0"
		return true, stale, nil
	})
	_, err := store.Use(context.Background(), "single", testSecret, UsageJoin)
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "has been used already") {
		t.Fatalf("Use: %v", err)
	}
	if !secretExists(t, client, "single") {
		t.Error("the token changed meanwhile was deleted")
	}
}
