package controlplane

import (
	"runtime"
	"runtime/debug"

	etcdversion "go.etcd.io/etcd/api/v3/version"
)

// version is set at build time: -ldflags "-X sigs.k8s.io/sample-generic-controlplane/controlplane.version=v0.1.0".
var version = ""

// VersionInfo names the versions a binary is built from.
type VersionInfo struct {
	ControlPlane string
	Kubernetes   string
	Etcd         string
	Go           string
}

// Versions reports the versions of this control plane, and of the
// Kubernetes and etcd modules linked into it.
func Versions() VersionInfo {
	v := VersionInfo{ControlPlane: version, Kubernetes: "unknown", Etcd: etcdversion.Version, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.ControlPlane == "" {
		v.ControlPlane = info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			v.Kubernetes = dep.Version
		}
	}
	return v
}
