// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:protobuf-gen=package
// +k8s:conversion-gen=sigs.k8s.io/sample-generic-controlplane/apis/controlplane
// +k8s:defaulter-gen=TypeMeta
// +groupName=controlplane.x-k8s.io
// +k8s:openapi-model-package=io.k8s.sigs.sample-generic-controlplane.apis.controlplane.v1alpha1

// Package v1alpha1 is version v1alpha1 of controlplane.x-k8s.io, the generic
// control plane's own objects: ServiceLocation, where the servers that
// service references name are.
package v1alpha1
