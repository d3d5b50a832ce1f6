// +k8s:deepcopy-gen=package
// +groupName=controlplane.x-k8s.io

// Package controlplane is the internal version of controlplane.x-k8s.io: the
// generic control plane's own objects, such as where the servers that
// service references name are (ServiceLocation).
package controlplane
