package v1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v2 "example.com/kubebuilder-project/api/v2"
)

// ConvertTo converts this Gadget to the Hub version (v2): its color
// becomes the first of v2's colors.
func (src *Gadget) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*v2.Gadget)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Size = src.Spec.Size
	dst.Spec.Colors = nil
	if src.Spec.Color != "" {
		dst.Spec.Colors = []string{src.Spec.Color}
	}
	dst.Status.ConfigMap = src.Status.ConfigMap
	return nil
}

// ConvertFrom converts from the Hub version (v2) to this version: the first
// of v2's colors.
func (dst *Gadget) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*v2.Gadget)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Size = src.Spec.Size
	dst.Spec.Color = ""
	if len(src.Spec.Colors) > 0 {
		dst.Spec.Color = src.Spec.Colors[0]
	}
	dst.Status.ConfigMap = src.Status.ConfigMap
	return nil
}
