package controlplane

import (
	goruntime "runtime"
	"testing"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

func TestContentionProfilingEnablesMutexProfile(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		profiling, contended bool
		want                 int
	}{
		{"profiling and contention profiling", true, true, mutexProfileFraction},
		{"contention profiling without profiling", false, true, 0},
		{"profiling alone", true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goruntime.SetMutexProfileFraction(0)
			t.Cleanup(func() { goruntime.SetMutexProfileFraction(0) })
			enableMutexProfile(&genericoptions.FeatureOptions{EnableProfiling: tc.profiling, EnableContentionProfiling: tc.contended})
			if got := goruntime.SetMutexProfileFraction(-1); got != tc.want {
				t.Errorf("mutex profile fraction %d, want %d", got, tc.want)
			}
		})
	}
}
