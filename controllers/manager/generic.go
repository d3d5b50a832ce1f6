package manager

import (
	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/generic"
	"sigs.k8s.io/sample-generic-controlplane/controllers/namespace"
	"sigs.k8s.io/sample-generic-controlplane/controllers/resourcequota"
)

// GenericControllers are the controllers of kube-controller-manager that the
// generic control plane runs, in start order: the garbage collector first,
// as the storage version migrator reads its caches.
func GenericControllers() []controller.Descriptor {
	return []controller.Descriptor{
		generic.GarbageCollectorDescriptor(),
		namespace.Descriptor(),
		generic.ServiceAccountDescriptor(),
		generic.ClusterRoleAggregationDescriptor(),
		resourcequota.Descriptor(),
		generic.CSRSigningDescriptor(),
		generic.CSRCleanerDescriptor(),
		generic.ServiceAccountTokenDescriptor(),
		generic.ValidatingAdmissionPolicyStatusDescriptor(),
		generic.RootCACertPublisherDescriptor(),
		generic.StorageVersionMigratorDescriptor(),
	}
}
