package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ServiceLocation says where the server of a service reference is. The
// control plane serves no Services, so the APIServices, admission webhooks
// and CRD conversion webhooks that name a service (namespace, name, port)
// reach it at the address and port given here, checking its certificate
// for NAME.NAMESPACE.svc as they would in a cluster. Its name is the
// service's name and namespace, NAME.NAMESPACE: "api.wardle" locates the
// reference {namespace: wardle, name: api}. A reference no ServiceLocation
// names is resolved by DNS, as NAME.NAMESPACE.svc.
type ServiceLocation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is where the service is served.
	Spec ServiceLocationSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// ServiceLocationSpec is where the service is served.
type ServiceLocationSpec struct {
	// address is the IP address or DNS name the server listens on, e.g.
	// 127.0.0.1 for a server beside the control plane.
	// +required
	Address string `json:"address" protobuf:"bytes,1,opt,name=address"`
	// ports maps the ports references name to the ports the server listens
	// on, at most 16, each referenced port once. A reference to a port not
	// listed is not resolved.
	// +listType=map
	// +listMapKey=port
	// +required
	Ports []ServiceLocationPort `json:"ports" protobuf:"bytes,2,rep,name=ports"`
}

// ServiceLocationPort maps one referenced port to the port the server
// listens on.
type ServiceLocationPort struct {
	// port is the port service references name, e.g. 443.
	// +required
	Port int32 `json:"port" protobuf:"varint,1,opt,name=port"`
	// targetPort is the port the server listens on at address.
	// +required
	TargetPort int32 `json:"targetPort" protobuf:"varint,2,opt,name=targetPort"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ServiceLocationList is a list of ServiceLocations.
type ServiceLocationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items are the ServiceLocations.
	Items []ServiceLocation `json:"items" protobuf:"bytes,2,rep,name=items"`
}
