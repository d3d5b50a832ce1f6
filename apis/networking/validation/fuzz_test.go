package validation

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

// FuzzValidateNetworkClaim builds claims from fuzzed fields: a record
// naming a prefix or asking for a length from another claim's pool, a
// second record beside it, and the claim's name. Validation must not
// panic; each error names a field of the claim and says what to write; a
// prefix it tells the user to write instead is accepted and covers the
// addresses the user meant; and what it accepts is what the allocator
// parses without doubt (canonical prefixes, no overlaps, pool lengths that
// fit). The corpus is in testdata/fuzz/FuzzValidateNetworkClaim.
func FuzzValidateNetworkClaim(f *testing.F) {
	type seed struct {
		claim, name, prefix string
		length              int32
		hasLength           bool
		from, pool          string
		delegable           bool
		other               string
		group, resource     string
	}
	for _, s := range []seed{
		{claim: "kube-apiserver", prefix: "10.96.0.0/12", other: "fd00:10:96::/112", resource: "services"},
		{claim: "org-pods", prefix: "10.0.0.0/8", delegable: true},
		{claim: "node-a", name: "pods-v4", length: 24, hasLength: true, from: "org-pods", pool: "10.0.0.0/8", other: "10.5.0.0/16"},
		{claim: "node-a", name: "pods-v6", length: 64, hasLength: true, from: "org-pods"},
		{claim: "node-a", prefix: "10.5.0.0/16", from: "org-pods", pool: "10.0.0.0/8"},
		{claim: "x", prefix: "10.0.0.1/8", other: "::ffff:1.2.3.4/128"},
		{claim: "x", prefix: "fe80::%eth0/64", other: "FD00::/64"},
		{claim: "x", prefix: "0.0.0.0/0", other: "::/0", group: "Not_A_Group", resource: "Services"},
		{claim: "x", name: "p", length: 4, hasLength: true, from: "x", pool: "10.0.0.0/8"},
		{claim: "x", name: "p", length: 129, hasLength: true, from: "org", pool: "::ffff:10.0.0.0/104"},
	} {
		f.Add(s.claim, s.name, s.prefix, s.length, s.hasLength, s.from, s.pool, s.delegable, s.other, s.group, s.resource)
	}
	f.Fuzz(func(t *testing.T, claimName, name, prefix string, length int32, hasLength bool, from, pool string, delegable bool, other, group, resource string) {
		record := networking.AddressSpaceRecord{Name: name, Prefix: prefix, Delegable: delegable}
		if hasLength {
			record.PrefixLength = &length
		}
		if from != "" || pool != "" {
			record.From = &networking.PrefixSource{Claim: from, Prefix: pool}
		}
		if group != "" || resource != "" {
			record.Reference = &networking.ResourceReference{Group: group, Resource: resource}
		}
		records := []networking.AddressSpaceRecord{record}
		if other != "" {
			records = append(records, networking.AddressSpaceRecord{Prefix: other})
		}
		c := &networking.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName}, Spec: networking.NetworkClaimSpec{AddressSpace: records}}
		errs := ValidateNetworkClaim(c)
		for _, err := range errs {
			checkError(t, c, err)
		}
		if len(errs) == 0 {
			checkAccepted(t, c)
		}
	})
}

// suggestedPrefix finds the prefix an error on a prefix tells the user to
// write instead of theirs: "write 10.0.0.0/8" at the end of its message.
var suggestedPrefix = regexp.MustCompile(`write (?:the IPv4 prefix,? (?:e\.g\. )?)?(\S+/\d+)$`)

func checkError(t *testing.T, c *networking.NetworkClaim, err *field.Error) {
	t.Helper()
	if !strings.HasPrefix(err.Field, "spec.") && !strings.HasPrefix(err.Field, "metadata.") {
		t.Errorf("an error names no field of the claim: %v", err)
	}
	if strings.HasPrefix(err.Field, "spec.") && (err.Type == field.ErrorTypeInvalid || err.Type == field.ErrorTypeRequired) && err.Detail == "" {
		t.Errorf("an error does not say what to write instead: %v", err)
	}
	m := suggestedPrefix.FindStringSubmatch(err.Detail)
	value, ok := err.BadValue.(string)
	if m == nil || !ok || !strings.HasSuffix(err.Field, "prefix") {
		return
	}
	suggestion := m[1]
	if _, ferr := validatePrefix(suggestion, field.NewPath("suggestion")); ferr != nil {
		t.Errorf("%v: the prefix it suggests is refused: %v", err, ferr)
		return
	}
	written, perr := netip.ParsePrefix(value)
	if perr != nil {
		t.Errorf("%v: suggests a prefix for a value that is none", err)
		return
	}
	if got, want := sameSpace(netip.MustParsePrefix(suggestion)), sameSpace(written.Masked()); got != want {
		t.Errorf("%v: suggests %s, which is %s; %q is %s", err, suggestion, got, value, want)
	}
}

// sameSpace writes a prefix as the IPv6 addresses it covers, IPv4 ones
// mapped, so that 10.0.0.0/8 and ::ffff:10.0.0.0/104 compare equal.
func sameSpace(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4() {
		return netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), p.Bits()+96)
	}
	return p
}

// checkAccepted checks what the allocator relies on in a valid claim.
func checkAccepted(t *testing.T, c *networking.NetworkClaim) {
	t.Helper()
	canonical := func(what, s string) netip.Prefix {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Masked() != p || p.String() != s || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			t.Errorf("accepted %s %q, which is not a canonical prefix", what, s)
		}
		return p
	}
	var exact []netip.Prefix
	for _, r := range c.Spec.AddressSpace {
		var pool netip.Prefix
		if r.From != nil {
			if r.From.Claim == "" || r.From.Claim == c.Name {
				t.Errorf("accepted a record taken from %q in claim %q", r.From.Claim, c.Name)
			}
			if r.From.Prefix != "" {
				pool = canonical("from.prefix", r.From.Prefix)
			}
		}
		if r.PrefixLength != nil {
			n := int(*r.PrefixLength)
			switch {
			case r.Prefix != "" || r.Name == "" || r.From == nil:
				t.Errorf("accepted prefixLength with prefix %q, name %q, from %v", r.Prefix, r.Name, r.From)
			case n < 1 || n > 128:
				t.Errorf("accepted prefixLength %d", n)
			case pool.IsValid() && (n <= pool.Bits() || n > pool.Addr().BitLen()):
				t.Errorf("accepted prefixLength %d from the pool %s", n, pool)
			}
			continue
		}
		p := canonical("prefix", r.Prefix)
		if pool.IsValid() && (p.Bits() <= pool.Bits() || !pool.Contains(p.Addr())) {
			t.Errorf("accepted %s from the pool %s, which does not strictly contain it", p, pool)
		}
		for _, q := range exact {
			if p.Overlaps(q) {
				t.Errorf("accepted %s beside %s in one claim", p, q)
			}
		}
		exact = append(exact, p)
	}
}
