// +k8s:deepcopy-gen=package
// +groupName=networking.x-k8s.io

// Package networking is the internal version of networking.x-k8s.io: the
// NetworkClaim registry of the cluster's IP address space.
package networking
