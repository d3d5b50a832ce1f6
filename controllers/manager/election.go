package manager

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Run runs the enabled controllers until ctx is done; with leader election
// only while this replica leads. rootConfig authenticates the manager itself
// (system:kube-controller-manager): it runs the shared informers and mints
// each controller's service-account credentials, nothing else.
// health, if not nil, receives the state of each controller.
//
// Once ctx is done, Run returns within o.ControllerShutdownTimeout, as
// kube-controller-manager's RunControllers does: by then the controllers have
// returned and the leader has released its Lease, or Run leaves them behind.
// A controller can be stuck where ctx does not reach, e.g. minting its
// credentials in a request that an etcd without quorum never answers. The
// Lease is released only once the controllers have returned; until then
// this replica holds it (renewing it while it can), so no other replica's
// controllers start while this one's may still write.
func Run(ctx context.Context, o *Options, rootConfig *rest.Config, health *Health) error {
	pending := &pendingWork{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, rootConfig, health, pending) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if o.ControllerShutdownTimeout == 0 {
		return <-done
	}
	timer := time.NewTimer(o.ControllerShutdownTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("still stopping %s after the stop began (--controller-shutdown-timeout); left behind: %s", o.ControllerShutdownTimeout, strings.Join(pending.list(), ", "))
	}
}

func run(ctx context.Context, o *Options, rootConfig *rest.Config, health *Health, pending *pendingWork) error {
	logger := klog.FromContext(ctx)
	if !slices.ContainsFunc(o.descriptors, o.runs) {
		// Leading with nothing to run would keep the Lease from a
		// replica (or a controllers process) that has controllers.
		logger.Info("No controllers enabled; not taking part in leader election")
		<-ctx.Done()
		return nil
	}
	rootClient, err := kubernetes.NewForConfig(rootConfig)
	if err != nil {
		return err
	}
	// The replica's identity: its Lease holder identity, and the host of
	// the events its controllers record.
	hostname, _ := os.Hostname()
	id := hostname + "_" + string(uuid.NewUUID())
	if !o.LeaderElect {
		return runControllers(ctx, o, id, rootConfig, rootClient, health, pending)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: identityNamespace, Name: LeaseName},
		Client:     rootClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	// Campaign until ctx ends: a replica that loses leadership (e.g. it
	// could not renew in time) stops its controllers and campaigns again,
	// instead of living on without controllers.
	for {
		campaign(ctx, o, lock, id, func(ctx context.Context) error {
			defer pending.add(leaseRelease) // campaign releases it next
			return runControllers(ctx, o, id, rootConfig, rootClient, health, pending)
		})
		pending.remove(leaseRelease)
		if ctx.Err() != nil {
			return nil
		}
		logger.Info("Lost leadership; campaigning again", "identity", id)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.RetryPeriod):
		}
	}
}

// campaign runs one leadership term: it waits to lead, runs controllers
// while leading, and returns once leadership ended and the controllers have
// stopped. The lease is released only after they stopped (on shutdown, or
// when they fail), so another replica never overlaps with them.
func campaign(ctx context.Context, o *Options, lock resourcelock.Interface, id string, run func(context.Context) error) {
	logger := klog.FromContext(ctx)
	// The election has a context of its own: ending ctx must first stop
	// the controllers, and only then cancel the election, which releases
	// the lease (ReleaseOnCancel).
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	term := &leadershipTerm{}
	// A replica that is not leading stops campaigning as soon as ctx ends.
	stopFollowing := context.AfterFunc(ctx, func() {
		if !term.leading() {
			cancelElection()
		}
	})
	defer stopFollowing()
	leaderelection.RunOrDie(electionCtx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadingCtx context.Context) {
				done, ok := term.begin()
				if !ok {
					return
				}
				defer close(done)
				// Controllers stop when leadership is lost or ctx ends.
				runCtx, stopRun := context.WithCancel(leadingCtx)
				defer stopRun()
				defer context.AfterFunc(ctx, stopRun)()
				logger.Info("Leading; starting controllers", "identity", id)
				if err := run(runCtx); err != nil {
					logger.Error(err, "Controllers failed; giving up leadership", "identity", id)
				}
				cancelElection()
			},
			OnStoppedLeading: func() { logger.Info("Leadership ended", "identity", id) },
		},
	})
	// RunOrDie returns without waiting for OnStartedLeading.
	term.end()
}

// leaseRelease is what pendingWork calls the release of the Lease.
const leaseRelease = "the release of Lease kube-system/" + LeaseName

// pendingWork names what a stop still waits for: the controllers that have
// not returned or not finished starting, and the release of the Lease.
type pendingWork struct {
	mu    sync.Mutex
	names sets.Set[string]
}

func (p *pendingWork) add(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = sets.New[string]()
	}
	p.names.Insert(name)
}

func (p *pendingWork) remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names.Delete(name)
}

// list returns the names in order.
func (p *pendingWork) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sets.List(p.names)
}

// leadershipTerm hands the controllers of one term from client-go's
// leader-election goroutine to Run, which waits for them to stop.
type leadershipTerm struct {
	mu    sync.Mutex
	ended bool
	done  chan struct{}
}

// leading reports whether the term's controllers have started.
func (t *leadershipTerm) leading() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done != nil
}

// begin registers the term's controllers; false once the term has ended
// (then they must not start).
func (t *leadershipTerm) begin() (chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, false
	}
	t.done = make(chan struct{})
	return t.done, true
}

// end closes the term and waits for its controllers, if they started.
func (t *leadershipTerm) end() {
	t.mu.Lock()
	t.ended = true
	done := t.done
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}
