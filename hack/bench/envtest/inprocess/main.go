// Command inprocess is hack/bench/envtest's child process for the
// in-process test server (controlplane/testing.Start): the server and the
// suite in one process, as a Go test runs them. It is a program of its own
// so that the other contenders' processes do not carry k8s.io/kubernetes
// (its package initialisation alone is tens of MiB), and so that its peak
// memory is the server's and the suite's only.
//
//	go build -o bin/bench-envtest-inprocess ./hack/bench/envtest/inprocess
//	bin/bench-envtest-inprocess [-log FILE -v N] -- [-servers N] [-tests N] [-crds DIR] [-cpuprofile FILE] [-trace FILE]
package main

import (
	"context"
	"flag"
	"io"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/envtest/phases"
)

func main() {
	klog.InitFlags(nil)
	logFile := flag.String("log", "", "write the servers' log to this file, at -v; by default it is discarded")
	flag.Parse()
	// The server logs as the binary does; the harness reads stdout.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			phases.Fail(err)
		}
		defer f.Close() //nolint:errcheck
		klog.SetOutput(f)
	}
	c := phases.Contender{Name: "in-process", Start: start, NamespacesGo: true}
	err := phases.RunChild(c, flag.Args(), os.Stdout)
	klog.Flush()
	if err != nil {
		phases.Fail(err)
	}
}

// server is a controlplane/testing server on a temporary data dir, the
// generic control plane a suite gets from cptesting.Options{}.
type server struct {
	*cptesting.TestServer
	dir string
}

func start(ctx context.Context) (phases.Server, error) {
	dir, err := os.MkdirTemp("", "bench-inprocess-")
	if err != nil {
		return nil, err
	}
	s, err := cptesting.Start(ctx, func() string { return dir }, cptesting.Options{})
	if err != nil {
		os.RemoveAll(dir) //nolint:errcheck
		return nil, err
	}
	return &server{TestServer: s, dir: dir}, nil
}

func (s *server) Config() *rest.Config { return s.ClientConfig }

func (s *server) InstallCRDs(ctx context.Context, dir string) error {
	_, err := s.TestServer.InstallCRDs(ctx, dir)
	return err
}

// Stop stops the server and removes its data dir, as t.TempDir's cleanup
// does after StartTestServer's.
func (s *server) Stop() error {
	err := s.TestServer.Stop()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}
