package benchutil

import (
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Ours is sample-generic-controlplane's binary on a data directory. Start
// it, stop it and start it again on the same directory to measure a restart.
type Ours struct {
	binary string
	args   []string
	dir    string
	Port   int
	P      *Process
}

// NewOurs picks a port for binary on data directory dir; args are extra flags.
func NewOurs(binary, dir string, args ...string) (*Ours, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args = append([]string{"--data-dir=" + dir, "--secure-port=" + strconv.Itoa(port)}, args...)
	return &Ours{binary: binary, args: args, dir: dir, Port: port}, nil
}

// Start starts the binary and waits for its readiness; tag names the log
// file, which lands beside the data directory.
func (o *Ours) Start(tag string) error {
	var err error
	if o.P, err = Start(o.binary, o.args, o.dir+"-"+tag+".log"); err != nil {
		return err
	}
	if err := WaitReady(o.Port, o.P, time.Minute); err != nil {
		o.P.Kill()
		return err
	}
	return nil
}

// Config is the admin client configuration the binary wrote.
func (o *Ours) Config() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", filepath.Join(o.dir, "admin.kubeconfig"))
}

// Pids is the running process.
func (o *Ours) Pids() []int {
	if o.P == nil {
		return nil
	}
	return []int{o.P.Cmd.Process.Pid}
}

// Stop stops the binary.
func (o *Ours) Stop() error {
	if o.P == nil {
		return nil
	}
	err := o.P.Stop()
	o.P = nil
	return err
}
