package bootstrap

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
)

// What appliedAlready cannot read (list elements, a manager's update rather
// than an apply) is applied: it never reports an object applied wrongly.
func TestAppliedAlreadyReadsOnlyWhatItCan(t *testing.T) {
	stored := func(manager string, op metav1.ManagedFieldsOperationType, fields string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name:       "r",
			Labels:     map[string]string{"a": "1"},
			Finalizers: []string{"example.com/keep"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
			}},
		}}
	}
	labelled := rbacv1ac.ClusterRole("r").WithLabels(map[string]string{"a": "1"})
	for _, tc := range []struct {
		name    string
		stored  *rbacv1.ClusterRole
		desired *rbacv1ac.ClusterRoleApplyConfiguration
		want    bool
	}{
		{"applied", stored(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`), labelled, true},
		{"another value", stored(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:a":{}}}}`), rbacv1ac.ClusterRole("r").WithLabels(map[string]string{"a": "2"}), false},
		{"owned but gone", stored(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:b":{}}}}`), labelled, false},
		{"updated, not applied", stored(FieldManager, metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{"f:a":{}}}}`), labelled, false},
		{"another manager's", stored("someone", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:a":{}}}}`), labelled, false},
		{"list elements", stored(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/keep\"":{}}}}`), rbacv1ac.ClusterRole("r").WithFinalizers("example.com/keep"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := appliedAlready(tc.stored, tc.desired); got != tc.want {
				t.Errorf("appliedAlready: %t, want %t", got, tc.want)
			}
		})
	}
}
