// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:protobuf-gen=package
// +k8s:conversion-gen=sigs.k8s.io/sample-generic-controlplane/apis/networking
// +k8s:defaulter-gen=TypeMeta
// +groupName=networking.x-k8s.io
// +k8s:openapi-model-package=io.k8s.sigs.sample-generic-controlplane.apis.networking.v1alpha1

// Package v1alpha1 is version v1alpha1 of networking.x-k8s.io: NetworkClaim,
// the registry of the cluster's IP address space.
package v1alpha1
