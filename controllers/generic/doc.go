// Package generic runs kube-controller-manager's controllers that a generic
// control plane needs, in-process: one file per controller, each with its
// descriptor (named as kube-controller-manager names it,
// k8s.io/kubernetes/cmd/kube-controller-manager/names) and its constructor,
// which builds upstream's controller (k8s.io/kubernetes/pkg/controller/...)
// with its identity and settings.
//
// A controller's earlier, short name (e.g. "garbagecollector") stays an
// alias and is the name the manager reports it under, so that
// --controllers values, health checks and log queries written for it keep
// working.
//
// The quota controller has a package of its own, controllers/resourcequota:
// its evaluators are shared with the ResourceQuota admission plugin. So has
// the namespace controller, controllers/namespace: it runs upstream's
// deleter under a controller whose deletion grace period is a setting.
package generic
