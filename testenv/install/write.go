package install

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
)

// object is a typed API object: a CRD or a webhook configuration.
type object interface {
	metav1.Object
	runtime.Object
}

// writer is the part of a typed client that writes cluster-scoped objects.
type writer[T object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate creates obj or, when an object of its name exists (a
// server restarted on the same data dir, or one installed twice), replaces
// it by obj. specChanged says that the object existed and the update
// changed its spec: its generation. obj is left as it is.
func createOrUpdate[T object](ctx context.Context, c writer[T], obj T) (got T, specChanged bool, err error) {
	got, err = c.Create(ctx, copyOf(obj), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return got, false, err
	}
	return update(ctx, c, obj)
}

// update replaces the object of obj's name by obj, whatever its resource
// version; obj is left as it is.
func update[T object](ctx context.Context, c writer[T], obj T) (got T, specChanged bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		replacement := copyOf(obj)
		replacement.SetResourceVersion(existing.GetResourceVersion())
		got, err = c.Update(ctx, replacement, metav1.UpdateOptions{})
		specChanged = err == nil && got.GetGeneration() != existing.GetGeneration()
		return err
	})
	return got, specChanged, err
}

func copyOf[T object](obj T) T {
	return obj.DeepCopyObject().(T)
}
