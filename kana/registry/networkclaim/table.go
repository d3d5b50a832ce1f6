package networkclaim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

// tableConvertor prints what a person needs at a glance: the prefixes, how
// many are allocated and, with -o wide, what they are for.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the claim."},
	{Name: "Prefixes", Type: "string", Description: "Claimed prefixes."},
	{Name: "Allocated", Type: "string", Description: "Allocated records out of claimed ones."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "References", Type: "string", Priority: 1, Description: "Resources the prefixes are for."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion, table.Continue, table.RemainingItemCount = m.GetResourceVersion(), m.GetContinue(), m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var claims []networking.NetworkClaim
	switch t := obj.(type) {
	case *networking.NetworkClaim:
		claims = []networking.NetworkClaim{*t}
	case *networking.NetworkClaimList:
		claims = t.Items
	default:
		return nil, fmt.Errorf("cannot print %T as a table", obj)
	}
	for i := range claims {
		table.Rows = append(table.Rows, row(&claims[i]))
	}
	return table, nil
}

func row(c *networking.NetworkClaim) metav1.TableRow {
	chosen := map[string]string{}
	for _, r := range c.Status.AddressSpace {
		if r.Name != "" && r.Status == networking.AllocationAllocated {
			chosen[r.Name] = r.Prefix
		}
	}
	var prefixes, references []string
	for _, r := range c.Spec.AddressSpace {
		prefixes = append(prefixes, specPrefix(r, chosen[r.Name]))
		if r.Reference != nil {
			references = append(references, r.Reference.Resource+groupSuffix(r.Reference.Group))
		} else {
			references = append(references, "<none>")
		}
	}
	allocated := 0
	for _, r := range c.Status.AddressSpace {
		if r.Status == networking.AllocationAllocated {
			allocated++
		}
	}
	return metav1.TableRow{
		Object: runtime.RawExtension{Object: c},
		Cells: []interface{}{
			c.Name,
			strings.Join(prefixes, ","),
			fmt.Sprintf("%d/%d", allocated, len(c.Spec.AddressSpace)),
			duration.HumanDuration(time.Since(c.CreationTimestamp.Time)),
			strings.Join(references, ","),
		},
	}
}

// specPrefix shows a record's prefix: the one claimed, or for a record
// taken from a pool the one chosen (else what it asks for), and where it
// is taken from.
func specPrefix(r networking.AddressSpaceRecord, chosen string) string {
	p := r.Prefix
	if p == "" {
		p = chosen
	}
	if p == "" && r.PrefixLength != nil {
		p = fmt.Sprintf("/%d", *r.PrefixLength)
	}
	if r.From != nil {
		p += " from " + r.From.Claim
	}
	if r.Delegable {
		p += " (delegable)"
	}
	return p
}

func groupSuffix(group string) string {
	if group == "" {
		return ""
	}
	return "." + group
}
