// Package integration tests the control plane in-process, through
// controlplane/testing, as a Go test suite that embeds it would.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

var shared *cptesting.TestServer

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sgcp-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // best effort
	shared, err = cptesting.Start(context.Background(), func() string { return dir }, cptesting.Options{Customize: kana.Install})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the shared control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared control plane: %v\n", err)
		}
	}()
	return m.Run()
}
