package main

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/envtest/phases"
)

// envtestContender is controller-runtime's envtest with kube-apiserver and
// etcd built from this module's graph, given by path as a suite gives them
// (KUBEBUILDER_ASSETS would do the same): nothing is downloaded. Its
// namespaces never go, as no namespace controller runs.
func envtestContender(kubeAPIServer, etcd string) phases.Contender {
	return phases.Contender{
		Name: "envtest",
		Start: func(context.Context) (phases.Server, error) {
			env := &envtest.Environment{
				ControlPlane: envtest.ControlPlane{
					APIServer: &envtest.APIServer{Path: kubeAPIServer},
					Etcd:      &envtest.Etcd{Path: etcd},
				},
				// Its default of 20 s is too short for ten at once on two
				// cores; a longer bound does not change a start's time.
				ControlPlaneStartTimeout: 2 * time.Minute,
				ControlPlaneStopTimeout:  time.Minute,
			}
			if _, err := env.Start(); err != nil {
				env.Stop() //nolint:errcheck // the start's error is the one to report
				return nil, err
			}
			return envtestServer{env}, nil
		},
	}
}

type envtestServer struct{ env *envtest.Environment }

func (s envtestServer) Config() *rest.Config { return s.env.Config }

// InstallCRDs installs as envtest.Environment.Start does with
// CRDInstallOptions.Paths: created, then polled (every 100 ms, its default)
// until in discovery.
func (s envtestServer) InstallCRDs(_ context.Context, dir string) error {
	_, err := envtest.InstallCRDs(s.env.Config, envtest.CRDInstallOptions{
		Paths: []string{dir}, ErrorIfPathMissing: true, MaxTime: 2 * time.Minute,
	})
	return err
}

// Stop stops kube-apiserver and etcd and removes their temporary
// directories.
func (s envtestServer) Stop() error { return s.env.Stop() }
