package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// The generic layer (KEP-4080's library) knows nothing of KANA: the
// NetworkClaim API, its client, its plug-in and its allocator are added
// through the public extension points, as a distribution adds its own. Of
// our API and client modules it uses only its own group,
// controlplane.x-k8s.io (ServiceLocations): not the generated clientset or
// informer factory, which bring every group with them.
func TestGenericLayerDoesNotImportKANA(t *testing.T) {
	const module = "sigs.k8s.io/sample-generic-controlplane/"
	generic := []string{module + "apis/controlplane", module + "client/listers/controlplane/"}
	kana := []string{module + "apis/", module + "client/", module + "kana", module + "controllers/allocation"}
	for _, pkg := range []string{module + "controlplane", module + "controllers/manager", module + "controlplane/testing"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
	deps:
		for _, dep := range strings.Fields(string(out)) {
			for _, g := range generic {
				if strings.HasPrefix(dep, g) {
					continue deps
				}
			}
			for _, k := range kana {
				if strings.HasPrefix(dep, k) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
