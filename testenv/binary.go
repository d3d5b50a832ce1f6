package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

const (
	// EnvBinary names the binary when Options.Binary is empty.
	EnvBinary = "SGCP_BINARY"
	// BinaryName is the binary looked for on $PATH when neither
	// Options.Binary nor $SGCP_BINARY names one.
	BinaryName = "sample-generic-controlplane"
)

// ErrNoBinary is returned (wrapped, with how to get one) when no binary is
// named and none is on $PATH.
var ErrNoBinary = errors.New("no " + BinaryName + " binary: Options.Binary is empty, $" + EnvBinary + " is not set, and there is none on $PATH")

// howToGetBinary says where a binary comes from.
const howToGetBinary = "build one with `make build` in a checkout of sigs.k8s.io/sample-generic-controlplane and set " +
	EnvBinary + "=<checkout>/bin/" + BinaryName + ", or put the " + BinaryName + " of a release archive on $PATH"

// findBinary returns the binary to run: the one Options.Binary names, else
// $SGCP_BINARY's, else sample-generic-controlplane on $PATH.
func findBinary(option string) (string, error) {
	if option != "" {
		path, err := exec.LookPath(option)
		if err != nil {
			return "", fmt.Errorf("Options.Binary: %w", err)
		}
		return path, nil
	}
	if env := os.Getenv(EnvBinary); env != "" {
		path, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("$%s: %w; %s", EnvBinary, err, howToGetBinary)
		}
		return path, nil
	}
	path, err := exec.LookPath(BinaryName)
	if err != nil {
		return "", fmt.Errorf("%w; %s", ErrNoBinary, howToGetBinary)
	}
	return path, nil
}
