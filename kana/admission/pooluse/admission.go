// Package pooluse is the admission plugin NetworkClaimPoolUse: taking
// address space from another NetworkClaim's delegable records (a record
// with from) requires the verb use on that claim, as binding a role
// requires bind on it. RBAC authorizes the request on the claim being
// written; only admission sees which claims its records draw from.
package pooluse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// PluginName is the name --enable-admission-plugins and
// --disable-admission-plugins know it by.
const PluginName = "NetworkClaimPoolUse"

// Verb is the verb that lets a user take address space from a claim.
const Verb = "use"

var networkClaims = networking.Resource("networkclaims")

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin refuses a write of a NetworkClaim that takes address space from
// a claim its user may not use. Only records whose from is new are
// checked: a record keeps the space it holds when its writer loses use.
type Plugin struct {
	*admission.Handler
	authz authorizer.UnconditionalAuthorizer
}

var (
	_ admission.ValidationInterface                     = &Plugin{}
	_ genericadmissioninit.WantsUnconditionalAuthorizer = &Plugin{}
)

// New returns the plugin. The server's admission initializer gives it the
// authorizer.
func New() *Plugin {
	// Delete takes nothing; status is the registry's and never says from.
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetUnconditionalAuthorizer sets the authorizer that decides use. The
// check needs a plain decision, no conditions, as upstream's bind check.
func (p *Plugin) SetUnconditionalAuthorizer(authz authorizer.UnconditionalAuthorizer) {
	p.authz = authz
}

// ValidateInitialization fails when no authorizer was set: without one
// every pool would be refused, or, worse, open.
func (p *Plugin) ValidateInitialization() error {
	if p.authz == nil {
		return fmt.Errorf("%s admission plugin: no authorizer", PluginName)
	}
	return nil
}

// Validate refuses the request if a record it adds or changes takes from a
// claim that the user may not use.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != networkClaims || a.GetSubresource() != "" {
		return nil
	}
	claim, ok := a.GetObject().(*networking.NetworkClaim)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("%s admission plugin: %s %q is a %T, not a NetworkClaim", PluginName, a.GetResource().Resource, a.GetName(), a.GetObject()))
	}
	var old *networking.NetworkClaim
	if a.GetOperation() == admission.Update {
		if old, ok = a.GetOldObject().(*networking.NetworkClaim); !ok {
			return apierrors.NewInternalError(fmt.Errorf("%s admission plugin: the stored %s %q is a %T, not a NetworkClaim", PluginName, a.GetResource().Resource, a.GetName(), a.GetOldObject()))
		}
	}
	pools := poolsTaken(claim, old)
	if len(pools) == 0 {
		return nil
	}
	u := a.GetUserInfo()
	if u == nil {
		// Authorizers expect a user; a request without one uses nothing.
		return admission.NewForbidden(a, errors.New("no user to authorize: taking address space from another NetworkClaim requires the verb use on it"))
	}
	var refusals []string
	var causes []metav1.StatusCause
	for _, pool := range pools {
		decision, reason, err := p.authz.Authorize(ctx, useAttributes(u, pool.claim))
		if decision == authorizer.DecisionAllow {
			continue
		}
		if err != nil {
			// Not a refusal: the user may well have use. Say so, as the
			// authorization filter answers 500 to an authorizer's error.
			return apierrors.NewInternalError(fmt.Errorf("authorizing user %q to %s NetworkClaim %s (%s): %w", u.GetName(), Verb, pool.claim, pool.field, err))
		}
		refusals = append(refusals, refusal(u, pool, reason))
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseTypeForbidden,
			Field:   pool.field.String(),
			Message: fmt.Sprintf("may not take address space from NetworkClaim %s without the verb %s on it", pool.claim, Verb),
		})
	}
	if len(refusals) == 0 {
		return nil
	}
	err := admission.NewForbidden(a, errors.New(strings.Join(refusals, "; ")))
	// The fields refused, for clients that explain them (registry claim):
	// a FieldValueForbidden cause on each refused record's from.claim.
	var status *apierrors.StatusError
	if errors.As(err, &status) && status.ErrStatus.Details != nil {
		status.ErrStatus.Details.Causes = causes
	}
	return err
}

// pool is a claim taken from, and the first record that takes from it.
type pool struct {
	claim string
	field *field.Path
}

// poolsTaken are the claims that claim's records take from anew, each once,
// in the order of its first record that does: every record with from on
// create, and on update those whose key (name and prefix) is new or whose
// from changed. A record keeps its key when only its other fields change,
// so editing a description re-checks nothing.
func poolsTaken(claim, old *networking.NetworkClaim) []pool {
	before := map[networkingv1alpha1.RecordKey]*networking.PrefixSource{}
	if old != nil {
		for _, r := range old.Spec.AddressSpace {
			before[recordKey(&r)] = r.From
		}
	}
	var pools []pool
	seen := map[string]bool{}
	records := field.NewPath("spec", "addressSpace")
	for i, r := range claim.Spec.AddressSpace {
		if r.From == nil || seen[r.From.Claim] {
			continue
		}
		if from, ok := before[recordKey(&r)]; ok && from != nil && *from == *r.From {
			continue
		}
		seen[r.From.Claim] = true
		pools = append(pools, pool{claim: r.From.Claim, field: records.Index(i).Child("from", "claim")})
	}
	return pools
}

// recordKey is the record's key, as server-side apply keys the list
// (networkingv1alpha1.RecordKey).
func recordKey(r *networking.AddressSpaceRecord) networkingv1alpha1.RecordKey {
	return networkingv1alpha1.RecordKey{Name: r.Name, Prefix: r.Prefix}
}

// useAttributes ask whether u may use the NetworkClaim name.
func useAttributes(u user.Info, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            Verb,
		APIGroup:        networking.GroupName,
		APIVersion:      "*",
		Resource:        networkClaims.Resource,
		Name:            name,
		ResourceRequest: true,
	}
}

// refusal says which record was refused and what to grant.
func refusal(u user.Info, p pool, reason string) string {
	msg := fmt.Sprintf("user %q may not take address space from NetworkClaim %s: %s: grant the verb %s on networkclaims %q in group %s (e.g. a ClusterRole with the rule {apiGroups: [%s], resources: [networkclaims], resourceNames: [%s], verbs: [%s]}, bound to the user)",
		u.GetName(), p.claim, p.field, Verb, p.claim, networking.GroupName, networking.GroupName, p.claim, Verb)
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}
