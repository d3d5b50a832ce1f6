package registrycli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	cliflag "k8s.io/component-base/cli/flag"
)

// uiOptions are registry ui's flags.
type uiOptions struct {
	registryOptions
	address     string
	acceptHosts []string
}

func newRegistryUICommand() *cobra.Command {
	o := &uiOptions{address: "127.0.0.1:8001"}
	cmd := &cobra.Command{
		Use:   "ui [--kubeconfig=FILE] [--address=127.0.0.1:8001]",
		Short: "Serve a live map of the registry to a browser on this machine: pools, the address space, who holds what",
		Long: `Serves a page that shows the registry live, as kubectl proxy serves the API: a web server in this
command, on this machine, that reads the control plane as the kubeconfig's user. Open the URL it
prints. The page shows:

  Pools          every allocated delegable prefix with a bar of how full it is, and the figures
                 of registry pools (IPv6 pools in /64s rather than a bar that would stay empty)
  Address space  the allocations as a tree: each pool's delegated prefixes, theirs in turn,
                 and the records that wait for one, with a link to what they wait for
  Waiting        every record that is not allocated, and what it waits for
  Who holds      an address or a prefix, answered as registry whois answers, chain included

It follows the registry with a watch: a change shows on the page within a second, without a
reload. The page only reads; it shows what the kubeconfig's user may see, and when that user may
not list NetworkClaims, it says so and which role grants it.

The server listens on 127.0.0.1:8001 unless --address says otherwise; port 0 takes a free port.
It refuses requests from other sites' pages and answers only to the host names of its address
(and localhost): a page that anyone who can reach it opens acts with the kubeconfig's rights, so
an --address other than loopback is printed with a warning. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd, registryFlags{noTimeout: true, own: func(fss *cliflag.NamedFlagSets) {
		fs := fss.FlagSet("serving")
		fs.StringVar(&o.address, "address", o.address, "Address to serve the page on, host:port. Loopback unless you mean to share the kubeconfig's rights with whoever can reach it.")
		fs.StringSliceVar(&o.acceptHosts, "accept-hosts", o.acceptHosts, "More host names the page may be opened by, besides localhost and --address's host, e.g. my-laptop.example.com; * accepts any (no protection against DNS rebinding).")
	}})
	return cmd
}

// run serves the page until ctx ends.
func (o *uiOptions) run(ctx context.Context, out, errOut io.Writer) error {
	host, _, err := net.SplitHostPort(o.address)
	if err != nil {
		return fmt.Errorf("--address %q: write host:port, e.g. --address=127.0.0.1:8001", o.address)
	}
	config, client, err := o.client()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	ln, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("--address %s: %w; choose another, e.g. --address=127.0.0.1:0 for any free port", o.address, err)
	}
	defer ln.Close() //nolint:errcheck // closed by Serve's end too
	port := ln.Addr().(*net.TCPAddr).Port

	hosts := append([]string{"localhost", "127.0.0.1", "::1"}, o.acceptHosts...)
	if !isLoopback(host) {
		fmt.Fprintf(errOut, "WARNING: serving on %s, which is not loopback: whoever can reach it reads the registry of %s with the rights of the kubeconfig's user.\n", ln.Addr(), config.Host)
	}
	urlHost := host
	if addr, err := netip.ParseAddr(host); host == "" || err == nil && addr.IsUnspecified() {
		urlHost = "127.0.0.1" // every address, loopback included
	} else {
		hosts = append(hosts, host)
	}
	s := newUIServer(config.Host, client, kube, hosts)
	fmt.Fprintf(out, "Serving a live map of the NetworkClaim registry of %s on http://%s/\n", config.Host, net.JoinHostPort(urlHost, fmt.Sprint(port)))

	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests end with ctx: event streams would hold Shutdown.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go s.follow(ctx)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx) // what it cannot finish, Close ends
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	}
	return nil
}

// isLoopback reports whether host, of --address, is a loopback address:
// only this machine reaches it.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}
