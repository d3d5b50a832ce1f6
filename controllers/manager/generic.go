package manager

import (
	"sigs.k8s.io/sample-generic-controlplane/controllers/clusterroleaggregation"
	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/csrcleaner"
	"sigs.k8s.io/sample-generic-controlplane/controllers/csrsigning"
	"sigs.k8s.io/sample-generic-controlplane/controllers/garbagecollector"
	"sigs.k8s.io/sample-generic-controlplane/controllers/namespace"
	"sigs.k8s.io/sample-generic-controlplane/controllers/resourcequota"
	"sigs.k8s.io/sample-generic-controlplane/controllers/rootcacertpublisher"
	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccount"
	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccounttoken"
	"sigs.k8s.io/sample-generic-controlplane/controllers/storageversionmigrator"
	"sigs.k8s.io/sample-generic-controlplane/controllers/validatingadmissionpolicystatus"
)

// GenericControllers are the controllers of kube-controller-manager that the
// generic control plane runs, in start order: the garbage collector first,
// as the storage version migrator reads its caches.
func GenericControllers() []controller.Descriptor {
	return []controller.Descriptor{
		garbagecollector.Descriptor(),
		namespace.Descriptor(),
		serviceaccount.Descriptor(),
		clusterroleaggregation.Descriptor(),
		resourcequota.Descriptor(),
		csrsigning.Descriptor(),
		csrcleaner.Descriptor(),
		serviceaccounttoken.Descriptor(),
		validatingadmissionpolicystatus.Descriptor(),
		rootcacertpublisher.Descriptor(),
		storageversionmigrator.Descriptor(),
	}
}
