// Code written as controller-gen generates it (controller-gen object);
// written by hand here, as the test module runs no generator.

package v2

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func (in *Gadget) DeepCopyInto(out *Gadget) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	out.Status = in.Status
}

func (in *Gadget) DeepCopy() *Gadget {
	if in == nil {
		return nil
	}
	out := new(Gadget)
	in.DeepCopyInto(out)
	return out
}

func (in *Gadget) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

func (in *GadgetList) DeepCopyInto(out *GadgetList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		in, out := &in.Items, &out.Items
		*out = make([]Gadget, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

func (in *GadgetList) DeepCopy() *GadgetList {
	if in == nil {
		return nil
	}
	out := new(GadgetList)
	in.DeepCopyInto(out)
	return out
}

func (in *GadgetList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

func (in *GadgetSpec) DeepCopyInto(out *GadgetSpec) {
	*out = *in
	if in.Colors != nil {
		out.Colors = make([]string, len(in.Colors))
		copy(out.Colors, in.Colors)
	}
}
