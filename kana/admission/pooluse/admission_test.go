package pooluse

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

// fakeAuthorizer allows use of the claims in allowed, fails for those in
// failing, and records what it was asked.
type fakeAuthorizer struct {
	allowed, failing []string
	asked            []authorizer.Attributes
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.asked = append(f.asked, a)
	switch {
	case slices.Contains(f.failing, a.GetName()):
		return authorizer.DecisionNoOpinion, "", errors.New("webhook authorizer unreachable")
	case slices.Contains(f.allowed, a.GetName()):
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func poolRecord(name, from string) networking.AddressSpaceRecord {
	length := int32(16)
	return networking.AddressSpaceRecord{Name: name, From: &networking.PrefixSource{Claim: from}, PrefixLength: &length}
}

func subPrefix(prefix, from, fromPrefix string) networking.AddressSpaceRecord {
	return networking.AddressSpaceRecord{Prefix: prefix, From: &networking.PrefixSource{Claim: from, Prefix: fromPrefix}}
}

func exact(prefix string) networking.AddressSpaceRecord {
	return networking.AddressSpaceRecord{Prefix: prefix}
}

func described(r networking.AddressSpaceRecord, description string) networking.AddressSpaceRecord {
	r.Description = description
	return r
}

func claim(records ...networking.AddressSpaceRecord) *networking.NetworkClaim {
	return &networking.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}, Spec: networking.NetworkClaimSpec{AddressSpace: records}}
}

func TestValidate(t *testing.T) {
	claims := networking.Resource("networkclaims").WithVersion("v1alpha1")
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	tests := []struct {
		desc        string
		resource    schema.GroupVersionResource
		subresource string
		op          admission.Operation
		obj, old    runtime.Object
		noUser      bool     // else alice
		allowed     []string // the claims alice may use
		failing     []string // the claims the authorizer fails for
		// wantAsked are the claims the authorizer is asked about, in order.
		wantAsked []string
		// wantErr: the error's beginning, then the parts it must contain.
		wantErr []string
		// wantInternal: an authorizer's failure, not a refusal.
		wantInternal bool
		// wantCauses are the refused fields.
		wantCauses []string
	}{
		{
			desc: "create, from a pool alice may use", op: admission.Create,
			obj: claim(poolRecord("pods-v4", "org-pods")), allowed: []string{"org-pods"}, wantAsked: []string{"org-pods"},
		},
		{
			desc: "create, from a pool alice may not use", op: admission.Create,
			obj: claim(exact("192.168.0.0/16"), poolRecord("pods-v4", "org-pods")), wantAsked: []string{"org-pods"},
			wantErr: []string{
				`networkclaims.networking.x-k8s.io "alpha" is forbidden: user "alice" may not take address space from NetworkClaim org-pods: spec.addressSpace[1].from.claim: ` +
					`grant the verb use on networkclaims "org-pods" in group networking.x-k8s.io (e.g. a ClusterRole with the rule ` +
					`{apiGroups: [networking.x-k8s.io], resources: [networkclaims], resourceNames: [org-pods], verbs: [use]}, bound to the user)`,
			},
			wantCauses: []string{"spec.addressSpace[1].from.claim"},
		},
		{
			desc: "create, an exact sub-prefix from a pool alice may not use", op: admission.Create,
			obj: claim(subPrefix("10.5.0.0/16", "org-pods", "")), wantAsked: []string{"org-pods"},
			wantErr: []string{`user "alice" may not take address space from NetworkClaim org-pods: spec.addressSpace[0].from.claim: `}, wantCauses: []string{"spec.addressSpace[0].from.claim"},
		},
		{
			desc: "create, each pool asked about once, each refused one named by its first record", op: admission.Create,
			obj:     claim(poolRecord("pods-v4", "org-pods"), poolRecord("services", "org-services"), poolRecord("pods-v6", "org-pods"), poolRecord("lab", "lab-pool")),
			allowed: []string{"org-services"}, wantAsked: []string{"org-pods", "org-services", "lab-pool"},
			wantErr: []string{
				`user "alice" may not take address space from NetworkClaim org-pods: spec.addressSpace[0].from.claim: `,
				`; user "alice" may not take address space from NetworkClaim lab-pool: spec.addressSpace[3].from.claim: `,
			},
			wantCauses: []string{"spec.addressSpace[0].from.claim", "spec.addressSpace[3].from.claim"},
		},
		{
			desc: "create without from asks nothing", op: admission.Create,
			obj: claim(exact("10.96.0.0/12")),
		},
		{
			desc: "update, from unchanged, other fields changed: not asked", op: admission.Update,
			old: claim(poolRecord("pods-v4", "org-pods"), subPrefix("10.5.0.0/16", "org-pods", "10.0.0.0/8")),
			obj: claim(described(poolRecord("pods-v4", "org-pods"), "pods"), described(subPrefix("10.5.0.0/16", "org-pods", "10.0.0.0/8"), "lab")),
		},
		{
			desc: "update, from.claim changed", op: admission.Update,
			old: claim(poolRecord("pods-v4", "org-pods")), obj: claim(poolRecord("pods-v4", "lab-pool")), wantAsked: []string{"lab-pool"},
			wantErr: []string{`NetworkClaim lab-pool: spec.addressSpace[0].from.claim: `}, wantCauses: []string{"spec.addressSpace[0].from.claim"},
		},
		{
			desc: "update, from.prefix changed", op: admission.Update,
			old: claim(subPrefix("10.5.0.0/16", "org-pods", "")), obj: claim(subPrefix("10.5.0.0/16", "org-pods", "10.0.0.0/8")), wantAsked: []string{"org-pods"},
			wantErr: []string{`NetworkClaim org-pods: spec.addressSpace[0].from.claim: `}, wantCauses: []string{"spec.addressSpace[0].from.claim"},
		},
		{
			desc: "update, from added to an exact record", op: admission.Update,
			old: claim(exact("10.5.0.0/16")), obj: claim(subPrefix("10.5.0.0/16", "org-pods", "")), wantAsked: []string{"org-pods"},
			wantErr: []string{`NetworkClaim org-pods: spec.addressSpace[0].from.claim: `}, wantCauses: []string{"spec.addressSpace[0].from.claim"},
		},
		{
			desc: "update, new record from a pool already used by another record", op: admission.Update,
			old: claim(poolRecord("pods-v4", "org-pods")), obj: claim(poolRecord("pods-v4", "org-pods"), poolRecord("pods-v6", "org-pods")), wantAsked: []string{"org-pods"},
			wantErr: []string{`NetworkClaim org-pods: spec.addressSpace[1].from.claim: `}, wantCauses: []string{"spec.addressSpace[1].from.claim"},
		},
		{
			// Its key is new: another record, whatever it takes from.
			desc: "update, a sub-prefix moved to another prefix", op: admission.Update,
			old: claim(subPrefix("10.5.0.0/16", "org-pods", "")), obj: claim(subPrefix("10.6.0.0/16", "org-pods", "")), allowed: []string{"org-pods"}, wantAsked: []string{"org-pods"},
		},
		{
			desc: "update, a record removed", op: admission.Update,
			old: claim(poolRecord("pods-v4", "org-pods"), poolRecord("services", "org-services")), obj: claim(poolRecord("services", "org-services")),
		},
		{
			desc: "the registry writes status", op: admission.Update, subresource: "status",
			old: claim(poolRecord("pods-v4", "org-pods")), obj: claim(poolRecord("pods-v4", "lab-pool")),
		},
		{
			desc: "another resource", op: admission.Create, resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		},
		{
			desc: "an authorizer's error is not a refusal", op: admission.Create,
			obj: claim(poolRecord("pods-v4", "org-pods")), failing: []string{"org-pods"}, wantAsked: []string{"org-pods"}, wantInternal: true,
			wantErr: []string{`authorizing user "alice" to use NetworkClaim org-pods (spec.addressSpace[0].from.claim): webhook authorizer unreachable`},
		},
		{
			desc: "no user", op: admission.Create, noUser: true,
			obj: claim(poolRecord("pods-v4", "org-pods")), allowed: []string{"org-pods"},
			wantErr: []string{`no user to authorize`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.resource.Empty() {
				tc.resource = claims
			}
			var u user.Info = alice
			if tc.noUser {
				u = nil
			}
			authz := &fakeAuthorizer{allowed: tc.allowed, failing: tc.failing}
			plugin := New()
			plugin.SetUnconditionalAuthorizer(authz)
			if err := plugin.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			if !plugin.Handles(tc.op) {
				t.Fatalf("the plugin does not handle %s", tc.op)
			}
			a := admission.NewAttributesRecord(tc.obj, tc.old, networking.Kind("NetworkClaim").WithVersion(""), "", "alpha", tc.resource, tc.subresource, tc.op, nil, false, u)
			err := plugin.Validate(t.Context(), a, nil)

			var asked []string
			for _, attrs := range authz.asked {
				if attrs.GetUser() != u || attrs.GetVerb() != "use" || attrs.GetAPIGroup() != "networking.x-k8s.io" || attrs.GetResource() != "networkclaims" ||
					attrs.GetSubresource() != "" || attrs.GetNamespace() != "" || !attrs.IsResourceRequest() {
					t.Errorf("asked the authorizer %#v, want alice's use of networkclaims in networking.x-k8s.io", attrs)
				}
				asked = append(asked, attrs.GetName())
			}
			if !slices.Equal(asked, tc.wantAsked) {
				t.Errorf("asked the authorizer about %q, want %q", asked, tc.wantAsked)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if tc.wantInternal != apierrors.IsInternalError(err) || tc.wantInternal == apierrors.IsForbidden(err) {
				t.Fatalf("Validate = %v (%s), want internal error: %v, forbidden: %v", err, apierrors.ReasonForError(err), tc.wantInternal, !tc.wantInternal)
			}
			if !strings.Contains(err.Error(), tc.wantErr[0]) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.wantErr[0])
			}
			for _, part := range tc.wantErr[1:] {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q\nwant it to contain %q", err, part)
				}
			}
			var causes []string
			if status, ok := err.(apierrors.APIStatus); ok && apierrors.IsForbidden(err) && status.Status().Details != nil {
				for _, c := range status.Status().Details.Causes {
					if c.Type != metav1.CauseTypeForbidden {
						t.Errorf("cause %+v, want type %s", c, metav1.CauseTypeForbidden)
					}
					causes = append(causes, c.Field)
				}
			}
			if !slices.Equal(causes, tc.wantCauses) {
				t.Errorf("causes %q, want %q", causes, tc.wantCauses)
			}
		})
	}
}

// Without an authorizer the server does not start, rather than refuse,
// or admit, every pool.
func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil || !strings.Contains(err.Error(), "no authorizer") {
		t.Fatalf("ValidateInitialization without an authorizer = %v, want an error naming the authorizer", err)
	}
}
