package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

// SharedFiles are the credentials every server of a cluster holds the same,
// by their names in the PKI directory: the authorities (with their keys:
// each server issues its own serving and peer certificates) and the
// service-account signing key (tokens one server issues, the others
// accept). Everything else in the directory is issued by each server for
// itself.
var SharedFiles = []string{
	"ca.crt", "ca.key",
	"front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd-ca.crt", "etcd-ca.key",
	"sa.key",
}

// ReadShared returns the shared credentials of the PKI in dir, by name.
func ReadShared(dir string) (map[string][]byte, error) {
	files := make(map[string][]byte, len(SharedFiles))
	for _, name := range SharedFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading the shared credentials: %w", err)
		}
		files[name] = data
	}
	return files, nil
}

// WriteShared places a cluster's shared credentials into dir before Ensure,
// for a server that joins the cluster. It refuses a set that lacks one of
// SharedFiles or has another file, and a directory that holds different
// credentials already: its data belongs to another cluster.
func WriteShared(dir string, files map[string][]byte) error {
	var errs []error
	for name := range files {
		if !slices.Contains(SharedFiles, name) {
			errs = append(errs, fmt.Errorf("%q is not a shared credential", name))
		}
	}
	for _, name := range SharedFiles {
		if len(files[name]) == 0 {
			errs = append(errs, fmt.Errorf("%s is missing", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the cluster's shared credentials are incomplete: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, name := range SharedFiles {
		path := filepath.Join(dir, name)
		existing, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(existing, files[name]):
			continue
		case err == nil:
			return fmt.Errorf("%s differs from the cluster's: this data dir belongs to another cluster; join with a new --data-dir, or remove %s to make this one join", path, filepath.Dir(dir))
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("reading %s: %w", path, err)
		}
		mode := os.FileMode(0o600)
		if filepath.Ext(name) == ".crt" {
			mode = 0o644
		}
		if err := atomicfile.Write(path, files[name], mode); err != nil {
			return err
		}
	}
	return nil
}
