package controlplane

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ServiceLocation says where the server of a service reference is: the
// control plane serves no Services, so APIServices, admission webhooks and
// CRD conversion webhooks that name a service (namespace, name, port) reach
// it at the address and port given here. Its name is the service's DNS
// label and namespace, NAME.NAMESPACE.
type ServiceLocation struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec ServiceLocationSpec
}

// ServiceLocationSpec is where the service is served.
type ServiceLocationSpec struct {
	// Address is the IP address or DNS name the server listens on.
	Address string
	// Ports maps the ports references name to those the server listens on.
	Ports []ServiceLocationPort
}

// ServiceLocationPort maps one referenced port.
type ServiceLocationPort struct {
	// Port is the port service references name.
	Port int32
	// TargetPort is the port the server listens on at Address.
	TargetPort int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ServiceLocationList is a list of ServiceLocations.
type ServiceLocationList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []ServiceLocation
}
