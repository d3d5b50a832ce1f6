package servicelocation

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
)

// tableConvertor prints where each service is served: its address and the
// ports, as kubectl prints a Service's (PORT:TARGETPORT).
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "The service's name and namespace, NAME.NAMESPACE."},
	{Name: "Address", Type: "string", Description: "Where the service's server listens."},
	{Name: "Ports", Type: "string", Description: "Referenced ports and the ports the server listens on."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion, table.Continue, table.RemainingItemCount = m.GetResourceVersion(), m.GetContinue(), m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var locations []controlplane.ServiceLocation
	switch t := obj.(type) {
	case *controlplane.ServiceLocation:
		locations = []controlplane.ServiceLocation{*t}
	case *controlplane.ServiceLocationList:
		locations = t.Items
	default:
		return nil, fmt.Errorf("cannot print %T as a table", obj)
	}
	for i := range locations {
		l := &locations[i]
		ports := make([]string, 0, len(l.Spec.Ports))
		for _, p := range l.Spec.Ports {
			ports = append(ports, strconv.Itoa(int(p.Port))+":"+strconv.Itoa(int(p.TargetPort)))
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []any{l.Name, l.Spec.Address, strings.Join(ports, ","), age(l.CreationTimestamp)},
			Object: runtime.RawExtension{Object: l},
		})
	}
	return table, nil
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
