package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	shopv1 "example.com/kubebuilder-project/api/v1"
)

// GadgetReconciler reconciles a Gadget object: it gives every Gadget a
// ConfigMap <name>-gadget, holding its color, that the Gadget controls.
type GadgetReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=shop.example.com,resources=gadgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=shop.example.com,resources=gadgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile moves the current state of the cluster closer to the desired state.
func (r *GadgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	gadget := &shopv1.Gadget{}
	if err := r.Get(ctx, req.NamespacedName, gadget); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gadget.Namespace, Name: gadget.Name + "-gadget"}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, config, func() error {
		config.Data = map[string]string{"color": gadget.Spec.Color}
		return controllerutil.SetControllerReference(gadget, config, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("ConfigMap", "operation", op)
	if gadget.Status.ConfigMap != config.Name {
		gadget.Status.ConfigMap = config.Name
		return ctrl.Result{}, r.Status().Update(ctx, gadget)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager sets up the controller with the Manager.
func (r *GadgetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&shopv1.Gadget{}).
		Owns(&corev1.ConfigMap{}).
		Named("gadget").
		Complete(r)
}
