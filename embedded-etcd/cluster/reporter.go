package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// A member's status report is a Lease: kube-system/etcd-member-<name>,
// held by the member's name, renewed by its server every report interval.
// The report travels through etcd like any object, so every server sees
// every member's state without an etcd client connection to it; a report
// that stops being renewed is a member (or its server) that is gone or cut
// off from the quorum.
const (
	leaseNamespace = metav1.NamespaceSystem
	leasePrefix    = "etcd-member-"
	// reportDuration is how long a report counts: four 10s intervals, so
	// one or two missed renewals do not make a member unhealthy.
	reportDuration = 40 * time.Second

	// LeaseLabel marks the reports; its value is the member's name.
	LeaseLabel = "controlplane.x-k8s.io/etcd-member"

	annotationDBSize       = "controlplane.x-k8s.io/etcd-db-size"
	annotationAppliedIndex = "controlplane.x-k8s.io/etcd-raft-applied-index"
	annotationLeader       = "controlplane.x-k8s.io/etcd-leader"
	annotationAPIServerURL = "controlplane.x-k8s.io/apiserver-url"
)

// LeaseName is the name of member's status report in kube-system.
func LeaseName(member string) string { return leasePrefix + member }

// RunStatusReporter reports the local member's status every interval until
// ctx ends, as the Lease kube-system/etcd-member-<name> (holderIdentity =
// name, renewTime, leaseDurationSeconds 40; annotations with the database
// size, the raft applied index, whether it leads, and apiServerURL), and
// then refreshes the metrics from List. A failed report is logged once, and
// again when reports resume.
func (m *Members) RunStatusReporter(ctx context.Context, apiServerURL string, interval time.Duration) {
	logger := klog.FromContext(ctx).WithValues("member", m.self)
	ctx = klog.NewContext(ctx, logger)
	failing := false
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := m.report(ctx, apiServerURL)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			logger.Error(err, "Could not report the etcd member's status; its peers will see it unhealthy", "retryEvery", interval)
		case err != nil:
			logger.V(4).Info("Could not report the etcd member's status", "err", err)
		case failing:
			logger.Info("Reporting the etcd member's status again")
		}
		failing = err != nil
		if _, err := m.List(ctx); err != nil {
			logger.V(4).Info("Could not refresh the etcd membership metrics", "err", err)
		}
	}, interval)
}

// report writes the local member's status report.
func (m *Members) report(ctx context.Context, apiServerURL string) error {
	status, err := m.localStatus(ctx)
	if err != nil {
		return err
	}
	now := metav1.NewMicroTime(m.clock.Now())
	leases := m.kube.CoordinationV1().Leases(leaseNamespace)
	lease, err := leases.Get(ctx, LeaseName(m.self), metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if create {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(m.self), Namespace: leaseNamespace}}
	} else if err != nil {
		return fmt.Errorf("reading the status report %s/%s: %w", leaseNamespace, LeaseName(m.self), err)
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[LeaseLabel] = m.self
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotationDBSize] = strconv.FormatInt(status.DbSize, 10)
	lease.Annotations[annotationAppliedIndex] = strconv.FormatUint(status.RaftAppliedIndex, 10)
	lease.Annotations[annotationLeader] = strconv.FormatBool(status.Leader != 0 && status.Leader == status.Header.MemberId)
	lease.Annotations[annotationAPIServerURL] = apiServerURL
	lease.Spec = coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(m.self),
		LeaseDurationSeconds: ptr.To(int32(reportDuration / time.Second)),
		AcquireTime:          lease.Spec.AcquireTime,
		RenewTime:            &now,
	}
	if lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &now
	}
	if create {
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing the status report %s/%s: %w", leaseNamespace, LeaseName(m.self), err)
	}
	return nil
}

// reports returns the members' status reports by member name.
func (m *Members) reports(ctx context.Context) (map[string]*coordinationv1.Lease, error) {
	// From the watch cache: a report is judged by its renewTime, which the
	// cache has within moments, and the cache answers without a quorum.
	list, err := m.kube.CoordinationV1().Leases(leaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: LeaseLabel, ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing %s Leases labelled %s: %w", leaseNamespace, LeaseLabel, err)
	}
	out := make(map[string]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		l := &list.Items[i]
		if l.Spec.HolderIdentity != nil && l.Name == LeaseName(*l.Spec.HolderIdentity) {
			out[*l.Spec.HolderIdentity] = l
		}
	}
	return out, nil
}

// applyReport fills in what the member's report says: health (renewed
// within its duration), its last report, database size, API server.
func applyReport(s *MemberStatus, lease *coordinationv1.Lease, now time.Time) {
	if lease == nil || lease.Spec.RenewTime == nil {
		s.Message = "no status report yet"
		return
	}
	renewed := lease.Spec.RenewTime.Time
	s.LastReport = &metav1.Time{Time: renewed}
	s.APIServerURL = lease.Annotations[annotationAPIServerURL]
	s.DBSize, _ = strconv.ParseInt(lease.Annotations[annotationDBSize], 10, 64)
	valid := reportDuration
	if d := lease.Spec.LeaseDurationSeconds; d != nil {
		valid = time.Duration(*d) * time.Second
	}
	if age := now.Sub(renewed); age > valid {
		s.Message = "no status report for " + duration.HumanDuration(age)
		return
	}
	s.Healthy = true
}
