// Package decodefuzz holds what the decoding fuzz targets of our API groups
// share: a request body the API server cannot trust, decoded as it decodes
// one (JSON, YAML or protobuf, into the served version, defaulted,
// converted to the internal version), then validated on create, on update
// and, for kinds with a status, on a status update. None of it may panic,
// every error must name its field, and an object that validates must come
// back equal from storage's encodings (protobuf, and JSON).
package decodefuzz

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind is one kind of an API group, as a fuzz target checks it.
type Kind struct {
	// Install registers the group's internal and served versions.
	Install func(*runtime.Scheme)
	// GVK is the served kind: a body that names no kind or version
	// decodes as this one, as a body sent to the kind's URL does.
	GVK schema.GroupVersionKind
	// Validate validates a new object; ValidateUpdate a changed one
	// against Old, a valid stored object (internal version).
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateStatusUpdate, if set, validates a write to the status
	// subresource against Old.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
	Old                  runtime.Object
	// Upstream are the fields that apimachinery's own validation checks
	// (metadata, conditions): their errors name the field, but are
	// worded upstream, without always saying what to write instead.
	Upstream []string
}

// Checker decodes fuzz input as one Kind. Build it once per fuzz target:
// a scheme and its codecs take longer to build than an input to check.
type Checker struct {
	kind     Kind
	internal schema.GroupVersion
	codecs   serializer.CodecFactory
	// strict decodes as a request with fieldValidation=Strict is decoded.
	strict serializer.CodecFactory
}

// mediaTypes are the encodings a client may send our kinds in.
var mediaTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}

// storageMediaTypes are the encodings etcd may hold our kinds in: protobuf,
// the API server's default --storage-media-type, and JSON, what releases
// before protobuf stored and what --storage-media-type=application/json
// stores.
var storageMediaTypes = []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON}

// New returns a Checker for kind.
func New(kind Kind) *Checker {
	scheme := runtime.NewScheme()
	kind.Install(scheme)
	return &Checker{
		kind:     kind,
		internal: schema.GroupVersion{Group: kind.GVK.Group, Version: runtime.APIVersionInternal},
		codecs:   serializer.NewCodecFactory(scheme),
		strict:   serializer.NewCodecFactory(scheme, serializer.EnableStrict),
	}
}

// AddSeeds adds each seed (JSON or YAML) to f's corpus, and the same
// object in protobuf when the seed decodes as the Kind: a protobuf body is
// hard to come by from random bytes, which rarely start with its magic.
func (c *Checker) AddSeeds(f *testing.F, seeds ...string) {
	f.Helper()
	info, _ := runtime.SerializerInfoForMediaType(c.codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	encoder := c.codecs.EncoderForVersion(info.Serializer, c.kind.GVK.GroupVersion())
	for _, seed := range seeds {
		f.Add([]byte(seed))
		obj, _, err := c.codecs.UniversalDecoder(c.kind.GVK.GroupVersion()).Decode([]byte(seed), &c.kind.GVK, nil)
		if err != nil {
			continue
		}
		data, err := runtime.Encode(encoder, obj)
		if err != nil {
			f.Fatalf("seed %s does not encode as protobuf: %v", seed, err)
		}
		f.Add(data)
	}
}

// Check decodes data in every media type and checks what comes of it.
func (c *Checker) Check(t *testing.T, data []byte) {
	t.Helper()
	for _, mediaType := range mediaTypes {
		strict, _ := runtime.SerializerInfoForMediaType(c.strict.SupportedMediaTypes(), mediaType)
		// Strict decoding only has to end, in an object or an error.
		_, _, _ = c.strict.DecoderToVersion(strict.Serializer, c.internal).Decode(data, &c.kind.GVK, nil)

		info, _ := runtime.SerializerInfoForMediaType(c.codecs.SupportedMediaTypes(), mediaType)
		obj, gvk, err := c.codecs.DecoderToVersion(info.Serializer, c.internal).Decode(data, &c.kind.GVK, nil)
		if err != nil || *gvk != c.kind.GVK {
			// Not this kind: the API server refuses the body, saying
			// what it is.
			continue
		}
		if c.checkValidation(t, mediaType, obj) {
			for _, stored := range storageMediaTypes {
				storage, _ := runtime.SerializerInfoForMediaType(c.codecs.SupportedMediaTypes(), stored)
				c.checkRoundTrip(t, storage, obj)
			}
		}
	}
}

// checkValidation validates obj as each write would, checks that every
// error says which field it is about, and reports whether every write
// would store it.
func (c *Checker) checkValidation(t *testing.T, mediaType string, obj runtime.Object) bool {
	t.Helper()
	created := c.kind.Validate(obj)
	c.checkErrors(t, mediaType+" create", created)
	old := mustAccessor(t, c.kind.Old)
	// An update names the stored object and carries its identity: the API
	// server takes the name from the URL, copies uid and creation time
	// from what it stores, and its resourceVersion when the update is
	// unconditional.
	updated := obj.DeepCopyObject()
	m := mustAccessor(t, updated)
	m.SetName(old.GetName())
	m.SetNamespace(old.GetNamespace())
	m.SetUID(old.GetUID())
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	if m.GetResourceVersion() == "" {
		m.SetResourceVersion(old.GetResourceVersion())
	}
	c.checkErrors(t, mediaType+" update", c.kind.ValidateUpdate(updated, c.kind.Old))
	if c.kind.ValidateStatusUpdate == nil {
		return len(created) == 0
	}
	// A status write names the stored object too, and keeps its metadata.
	status := updated.DeepCopyObject()
	metav1.ResetObjectMetaForStatus(mustAccessor(t, status), old)
	statusErrs := c.kind.ValidateStatusUpdate(status, c.kind.Old)
	c.checkErrors(t, mediaType+" status update", statusErrs)
	return len(created) == 0 && len(statusErrs) == 0
}

// checkErrors checks that every error names its field and, outside the
// fields upstream validates, says what to write instead.
func (c *Checker) checkErrors(t *testing.T, what string, errs field.ErrorList) {
	t.Helper()
	for _, err := range errs {
		if err.Field == "" {
			t.Errorf("%s: an error names no field: %v", what, err)
		}
		upstream := slices.ContainsFunc(c.kind.Upstream, func(f string) bool {
			return err.Field == f || strings.HasPrefix(err.Field, f+".") || strings.HasPrefix(err.Field, f+"[")
		})
		if !upstream && (err.Type == field.ErrorTypeInvalid || err.Type == field.ErrorTypeRequired) && err.Detail == "" {
			t.Errorf("%s: an error does not say what to write instead: %v", what, err)
		}
	}
}

// checkRoundTrip encodes a valid object as storage does in info's media
// type, in the served version, decodes it back and compares: only its times may differ, below
// the second, which is all metav1.Time stores.
func (c *Checker) checkRoundTrip(t *testing.T, info runtime.SerializerInfo, obj runtime.Object) {
	t.Helper()
	// The API server writes these itself (rest.BeforeCreate, the field
	// manager); what becomes of odd values in them is apimachinery's.
	obj = obj.DeepCopyObject()
	m := mustAccessor(t, obj)
	m.SetCreationTimestamp(metav1.Time{})
	m.SetDeletionTimestamp(nil)
	m.SetManagedFields(nil)

	data, err := runtime.Encode(c.codecs.EncoderForVersion(info.Serializer, c.kind.GVK.GroupVersion()), obj)
	if err != nil {
		t.Errorf("%s: a valid object does not encode: %v", info.MediaType, err)
		return
	}
	back, err := runtime.Decode(c.codecs.DecoderToVersion(info.Serializer, c.internal), data)
	if err != nil {
		t.Errorf("%s: a valid object, once stored, does not decode: %v\n%s", info.MediaType, err, data)
		return
	}
	if !stored.DeepEqual(obj, back) {
		t.Errorf("%s: a valid object changed in a round trip (-before +after):\n%s", info.MediaType, diff.Diff(obj, back))
	}
}

// stored compares objects as apimachinery's semantic equality does, but
// times as storage keeps them: to the second.
var stored = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	utilruntime.Must(e.AddFunc(func(a, b metav1.Time) bool { return a.Unix() == b.Unix() }))
	return e
}()

func mustAccessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("%T has no object metadata: %v", obj, err)
	}
	return m
}
