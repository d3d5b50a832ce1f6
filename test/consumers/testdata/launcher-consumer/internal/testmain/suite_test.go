package testmain

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/sample-generic-controlplane/testenv"
)

// cfg is the control plane's, for the tests' clients.
var cfg *rest.Config

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	server, err := testenv.Start(context.Background(), testenv.Options{})
	if err != nil {
		log.Print(err)
		return 1
	}
	defer func() {
		if err := server.Stop(); err != nil {
			log.Print(err)
			code = 1
		}
	}()

	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd")},
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    new(true),
		Config:                server.ClientConfig,
	}
	if cfg, err = testEnv.Start(); err != nil {
		log.Print(err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			log.Print(err)
			code = 1
		}
	}()
	return m.Run()
}
