package main

import (
	"context"

	"k8s.io/client-go/rest"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/envtest/phases"
	"sigs.k8s.io/sample-generic-controlplane/testenv"
)

// launcherMissing says why the launcher is not measured; empty: it is.
const launcherMissing = ""

// launcherContender starts binary, sample-generic-controlplane, through
// the testenv launcher: a process per server, on a fresh data dir and a
// free port, stopped by SIGTERM. Its namespace controller runs, so
// namespaces go.
func launcherContender(binary string) phases.Contender {
	return phases.Contender{
		Name:         "launcher",
		NamespacesGo: true,
		Start: func(ctx context.Context) (phases.Server, error) {
			s, err := testenv.Start(ctx, testenv.Options{Binary: binary})
			if err != nil {
				return nil, err
			}
			return launcherServer{s}, nil
		},
	}
}

type launcherServer struct{ *testenv.TestServer }

func (s launcherServer) Config() *rest.Config { return s.ClientConfig }

// InstallCRDs installs as Options.CRDPaths does: until established, in
// discovery and served.
func (s launcherServer) InstallCRDs(ctx context.Context, dir string) error {
	_, err := s.TestServer.InstallCRDs(ctx, dir)
	return err
}
