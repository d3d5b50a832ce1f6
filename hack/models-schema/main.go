// Command models-schema prints the OpenAPI v2 definitions of our generated
// OpenAPI packages as one swagger document; hack/update-codegen.sh feeds it to
// applyconfiguration-gen so that apply configurations know list types and keys.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	controlplaneopenapi "sigs.k8s.io/sample-generic-controlplane/apis/controlplane/openapi"
	"sigs.k8s.io/sample-generic-controlplane/apis/generated/openapi"
)

func main() {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	definitions := map[string]spec.Schema{}
	defs := openapi.GetOpenAPIDefinitions(ref)
	maps.Copy(defs, controlplaneopenapi.GetOpenAPIDefinitions(ref))
	for name, def := range defs {
		schema := def.Schema
		// Types with an embedded v2 schema use it, so the output is v2 throughout.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schema = v2
		}
		definitions[name] = schema
	}
	doc := spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "sample-generic-controlplane", Version: "unversioned"}},
		Definitions: definitions,
	}}
	if err := json.NewEncoder(os.Stdout).Encode(&doc); err != nil {
		fmt.Fprintln(os.Stderr, "models-schema:", err)
		os.Exit(1)
	}
}
