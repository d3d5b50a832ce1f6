package registrycli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// releaseOptions are the flags of registry release.
type releaseOptions struct {
	registryOptions
}

func newRegistryReleaseCommand() *cobra.Command {
	o := &releaseOptions{}
	cmd := &cobra.Command{
		Use:   "release NAME [--kubeconfig=FILE]",
		Short: "Delete a NetworkClaim, releasing its prefixes",
		Long: `Deletes the NetworkClaim NAME and prints what it held: each record's prefix and the registry's
decision on it. Its allocated prefixes are free again; claims waiting for them get them, first
come, first served. Prefixes others took from its delegable prefixes stay theirs: it names them.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("release takes one NetworkClaim name, e.g. release cluster-a; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	o.addFlags(cmd, registryFlags{timeout: "How long to wait for the control plane before giving up."})
	return cmd
}

func (o *releaseOptions) run(ctx context.Context, out io.Writer, name string) error {
	config, client, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRegistryTimeout)
	defer cancel()
	// One list tells what the claim holds and what others took from it.
	r, err := o.snapshot(ctx, config, client)
	if err != nil {
		return err
	}
	var claim *v1alpha1.NetworkClaim
	for _, c := range r.Claims() {
		if c.Name == name {
			claim = c
		}
	}
	notFound := fmt.Errorf("NetworkClaim %s not found: nothing to release; registry list shows the claims there are", name)
	if claim == nil {
		return notFound
	}
	// The object listed, not one created again since under the same name.
	err = client.NetworkingV1alpha1().NetworkClaims().Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(claim.UID))})
	switch {
	case apierrors.IsNotFound(err):
		return notFound
	case apierrors.IsConflict(err):
		return fmt.Errorf("NetworkClaim %s was deleted and created again meanwhile; not released: run registry release %s again to release the new one", name, name)
	case err != nil:
		return fmt.Errorf("releasing NetworkClaim %s: %w", name, err)
	}
	// What it held, with the decision it had: the Allocated prefixes are
	// free now.
	fmt.Fprintf(out, "NetworkClaim %s released; it held:\n", name)
	tw := newTabWriter(out)
	fmt.Fprintln(tw, "RECORD\tPREFIX\tSTATUS")
	for _, d := range networkregistry.Decisions(claim) {
		rec := decisionRecord(name, d)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", orDash(rec.Name), orDash(rec.Prefix), rec.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Delegated prefixes stay with their holders (the registry's rule):
	// say so, since the space is not all free.
	for _, a := range r.Allocations() {
		if a.DelegatedFrom != nil && a.DelegatedFrom.Claim == name {
			fmt.Fprintf(out, "%s stays with NetworkClaim %s, which took it from %s\n", a.Prefix, a.Claim, a.DelegatedFrom.Prefix)
		}
	}
	return nil
}
