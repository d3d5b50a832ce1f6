package envtest

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetConversion(t *testing.T) {
	crd := func(group, kind string, conversion *apiextensionsv1.CustomResourceConversion, preserve bool) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: kind}, Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind}, Conversion: conversion, PreserveUnknownFields: preserve}}
	}
	fromManifest := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{}}
	for _, tc := range []struct {
		name         string
		crd          *apiextensionsv1.CustomResourceDefinition
		ignoreScheme bool
		wantWebhook  bool
		wantNil      bool
	}{
		{name: "a kind the scheme converts", crd: crd("shop.example.com", "Gadget", nil, false), wantWebhook: true},
		{name: "a kind the scheme does not convert loses its manifest's webhook", crd: crd("shop.example.com", "Other", fromManifest.DeepCopy(), false), wantNil: true},
		{name: "IgnoreSchemeConvertible: every CRD converts by webhook", crd: crd("shop.example.com", "Other", nil, false), ignoreScheme: true, wantWebhook: true},
		{name: "a CRD that preserves unknown fields is left alone", crd: crd("shop.example.com", "Gadget", nil, true), wantNil: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setConversion([]*apiextensionsv1.CustomResourceDefinition{tc.crd}, convertibleGadgets(), tc.ignoreScheme)
			conv := tc.crd.Spec.Conversion
			switch {
			case tc.wantNil && conv != nil:
				t.Errorf("conversion %+v, want none", conv)
			case tc.wantWebhook && (conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook.ClientConfig.Service == nil || *conv.Webhook.ClientConfig.Service.Path != "/convert"):
				t.Errorf("conversion %+v, want a webhook at /convert", conv)
			}
		})
	}
}
