package install

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// clientConfigs lists, by configuration and webhook name, the client
// configurations of o's webhooks.
func clientConfigs(o *WebhookOptions) map[string]admissionregistrationv1.WebhookClientConfig {
	got := map[string]admissionregistrationv1.WebhookClientConfig{}
	for _, c := range o.MutatingWebhooks {
		for _, w := range c.Webhooks {
			got[c.Name+"/"+w.Name] = w.ClientConfig
		}
	}
	for _, c := range o.ValidatingWebhooks {
		for _, w := range c.Webhooks {
			got[c.Name+"/"+w.Name] = w.ClientConfig
		}
	}
	return got
}

func TestPrepareReadsAndPatches(t *testing.T) {
	given := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "given"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "given.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: ptr.To("/given")}},
		}},
	}
	for _, tc := range []struct {
		name, host string
		wantHost   string // in the URLs
	}{
		{name: "default host", wantHost: "127.0.0.1"},
		{name: "IPv6 address", host: "::1", wantHost: "[::1]"},
		{name: "DNS name", host: "localhost", wantHost: "localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &WebhookOptions{
				Paths:               []string{"testdata/webhooks"},
				MutatingWebhooks:    []*admissionregistrationv1.MutatingWebhookConfiguration{given},
				LocalServingHost:    tc.host,
				LocalServingPort:    9443, // no free port sought: ::1 may not be there
				LocalServingCertDir: t.TempDir(),
			}
			if err := o.Prepare(); err != nil {
				t.Fatal(err)
			}
			base := "https://" + tc.wantHost + ":9443"
			want := map[string]string{
				"given/given.example.com":                              base + "/given",
				"mutating-webhook-configuration/mwidget.example.com":   base + "/mutate-example-com-v1-widget",
				"validating-webhook-configuration/vwidget.example.com": base + "/validate-example-com-v1-widget",
				"validating-webhook-configuration/vgadget.example.com": base + "/validate-example-com-v1-gadget",
				"by-url/url.example.com":                               base + "/check", // the URL's host replaced, its path kept
			}
			got := clientConfigs(o)
			if len(got) != len(want) {
				t.Errorf("webhooks %v, want %d", slices.Sorted(maps.Keys(got)), len(want))
			}
			for name, url := range want {
				cc, ok := got[name]
				switch {
				case !ok:
					t.Errorf("%s: missing", name)
				case cc.URL == nil || *cc.URL != url:
					t.Errorf("%s: url %v, want %s", name, ptr.Deref(cc.URL, "<nil>"), url)
				case cc.Service != nil:
					t.Errorf("%s: service %v left beside the url", name, cc.Service)
				case string(cc.CABundle) != string(o.LocalServingCAData) || len(cc.CABundle) == 0:
					t.Errorf("%s: caBundle is not LocalServingCAData", name)
				}
			}
			// The given object is the caller's: it is left as it was.
			if given.Webhooks[0].ClientConfig.Service == nil || given.Webhooks[0].ClientConfig.URL != nil {
				t.Errorf("Prepare changed the configuration it was given: %+v", given.Webhooks[0].ClientConfig)
			}

			// The certificate in the directory is for the host, signed by
			// the CA in LocalServingCAData.
			pair, err := tls.LoadX509KeyPair(filepath.Join(o.LocalServingCertDir, "tls.crt"), filepath.Join(o.LocalServingCertDir, "tls.key"))
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(o.LocalServingCAData) {
				t.Fatal("LocalServingCAData holds no certificate")
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: o.LocalServingHost, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("serving certificate for %s: %v", o.LocalServingHost, err)
			}

			// Prepared once: a second call, or one on a copy, changes nothing.
			ca := string(o.LocalServingCAData)
			again := *o
			for _, p := range []*WebhookOptions{o, &again} {
				if err := p.Prepare(); err != nil {
					t.Fatal(err)
				}
				if string(p.LocalServingCAData) != ca || len(p.MutatingWebhooks) != 2 {
					t.Errorf("Prepare again made a new CA or read the files again")
				}
			}
		})
	}
}

func TestServingCertificateSANs(t *testing.T) {
	for _, tc := range []struct {
		host    string
		wantIP  string
		wantDNS string
	}{
		{host: "127.0.0.1", wantIP: "127.0.0.1"},
		{host: "::1", wantIP: "::1"},
		{host: "localhost", wantDNS: "localhost"},
		{host: "webhooks.example.test", wantDNS: "webhooks.example.test"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			s, err := newServingCertificate(tc.host)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(s.cert, s.key)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			var ips []string
			for _, ip := range leaf.IPAddresses {
				ips = append(ips, ip.String())
			}
			if tc.wantIP != "" && (len(ips) != 1 || ips[0] != tc.wantIP || len(leaf.DNSNames) != 0) {
				t.Errorf("SANs: IPs %v, DNS names %v; want the IP %s alone", ips, leaf.DNSNames, tc.wantIP)
			}
			if tc.wantDNS != "" && (len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != tc.wantDNS || len(ips) != 0) {
				t.Errorf("SANs: IPs %v, DNS names %v; want the DNS name %s alone", ips, leaf.DNSNames, tc.wantDNS)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(s.ca)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.host}); err != nil {
				t.Errorf("not valid for %s under its CA: %v", tc.host, err)
			}
			// A CA made for this certificate alone: another call's does not trust it.
			other, err := newServingCertificate(tc.host)
			if err != nil {
				t.Fatal(err)
			}
			otherRoots := x509.NewCertPool()
			otherRoots.AppendCertsFromPEM(other.ca)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: tc.host}); err == nil {
				t.Error("another call's CA trusts this certificate")
			}
		})
	}
}

func TestPrepareErrors(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    WebhookOptions
		wantErr []string
	}{
		{
			name:    "missing path",
			opts:    WebhookOptions{Paths: []string{"testdata/webhooks", filepath.Join("..", "config", "webhook")}},
			wantErr: []string{"WebhookOptions.Paths", `"../config/webhook" does not exist`, "relative paths start at", "a webhook configuration file", `config", "webhook", "manifests.yaml"`},
		},
		{
			name:    "directory without manifests",
			opts:    WebhookOptions{Paths: []string{empty}},
			wantErr: []string{empty, "holds no .yaml, .yml or .json file", "the webhook configurations are in"},
		},
		{
			name:    "a document of another kind",
			opts:    WebhookOptions{Paths: []string{"testdata/invalid-webhooks/service.yaml"}},
			wantErr: []string{"testdata/invalid-webhooks/service.yaml (document 2)", "kind Service (apiVersion v1), not a MutatingWebhookConfiguration or ValidatingWebhookConfiguration", "config/webhook/manifests.yaml, not its directory"},
		},
		{
			name:    "a version no longer served",
			opts:    WebhookOptions{Paths: []string{"testdata/invalid-webhooks/v1beta1.yaml"}},
			wantErr: []string{"testdata/invalid-webhooks/v1beta1.yaml (document 1)", "admissionregistration.k8s.io/v1beta1 is not served", "write apiVersion: admissionregistration.k8s.io/v1"},
		},
		{
			name:    "misspelt field",
			opts:    WebhookOptions{Paths: []string{"testdata/invalid-webhooks/typo.yaml"}},
			wantErr: []string{"testdata/invalid-webhooks/typo.yaml (document 1)", `unknown field "webhooks[0].sideEfects"`},
		},
		{
			name:    "no name",
			opts:    WebhookOptions{Paths: []string{"testdata/invalid-webhooks/noname.yaml"}},
			wantErr: []string{"testdata/invalid-webhooks/noname.yaml (document 1)", "MutatingWebhookConfiguration without metadata.name"},
		},
		{
			name: "a service reference without a path",
			opts: WebhookOptions{
				Paths: []string{"testdata/invalid-webhooks/nopath.yaml"},
				// Fine, and patched before the file's webhook fails.
				MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "fine"}}},
			},
			wantErr: []string{`testdata/invalid-webhooks/nopath.yaml (document 1): webhook "nopath.example.com" of ValidatingWebhookConfiguration "no-path"`, "neither service.path nor url", "write service.path"},
		},
		{
			name:    "one name in two files",
			opts:    WebhookOptions{Paths: []string{"testdata/webhooks/manifests.yaml", "testdata/invalid-webhooks/again.yaml"}},
			wantErr: []string{`ValidatingWebhookConfiguration "validating-webhook-configuration" is given in testdata/webhooks/manifests.yaml (document 2) and again in testdata/invalid-webhooks/again.yaml (document 1)`},
		},
		{
			name: "one name as an object and in a file",
			opts: WebhookOptions{
				Paths:              []string{"testdata/invalid-webhooks/again.yaml"},
				ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "validating-webhook-configuration"}}},
			},
			wantErr: []string{`is given in WebhookOptions.ValidatingWebhooks and again in testdata/invalid-webhooks/again.yaml (document 1)`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			tc.opts.LocalServingCertDir = dir
			given := slices.Clone(tc.opts.MutatingWebhooks)
			err := tc.opts.Prepare()
			if err == nil {
				t.Fatal("Prepare succeeded, want an error")
			}
			t.Log(err)
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			// Nothing is written or set when the webhooks are wrong.
			if tc.opts.LocalServingHost != "" || tc.opts.LocalServingCAData != nil || !slices.Equal(tc.opts.MutatingWebhooks, given) {
				t.Errorf("Prepare failed, but changed the options: %+v", tc.opts)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("Prepare failed, but wrote %s: %v", dir, err)
			}
		})
	}
}

func TestPrepareDefaultsAndCleanup(t *testing.T) {
	o := &WebhookOptions{}
	if err := o.Prepare(); err != nil {
		t.Fatal(err)
	}
	if o.LocalServingHost != DefaultLocalServingHost || o.LocalServingPort == 0 || o.LocalServingCertDir == "" {
		t.Errorf("Prepare left host %q, port %d, cert dir %q", o.LocalServingHost, o.LocalServingPort, o.LocalServingCertDir)
	}
	if _, err := os.Stat(filepath.Join(o.LocalServingCertDir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if err := o.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(o.LocalServingCertDir); !os.IsNotExist(err) {
		t.Errorf("Cleanup left the directory Prepare made: %v", err)
	}

	// A directory the caller named is the caller's.
	mine := &WebhookOptions{LocalServingCertDir: t.TempDir()}
	if err := mine.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := mine.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mine.LocalServingCertDir, "tls.crt")); err != nil {
		t.Errorf("Cleanup removed a directory it did not make: %v", err)
	}
}

func conversionCRD(name string, conversion *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: conversion}}
}

func webhookConversion(cc *apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1"}},
	}
}

func TestPatchConversion(t *testing.T) {
	o := &WebhookOptions{LocalServingPort: 9443, LocalServingCertDir: t.TempDir()}
	base := "https://127.0.0.1:9443"
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		wantURL string // empty: left as it is
	}{
		{
			name:    "service reference with a path",
			crd:     conversionCRD("a", webhookConversion(&apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: ptr.To("/convert-widgets")}})),
			wantURL: base + "/convert-widgets",
		},
		{
			name:    "service reference without a path",
			crd:     conversionCRD("b", webhookConversion(&apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "system", Name: "webhook-service"}})),
			wantURL: base + "/convert",
		},
		{
			name:    "URL",
			crd:     conversionCRD("c", webhookConversion(&apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://webhooks.example.com/conversion")})),
			wantURL: base + "/conversion",
		},
		{
			name:    "no client config",
			crd:     conversionCRD("d", webhookConversion(nil)),
			wantURL: base + "/convert",
		},
		{
			name: "no conversion",
			crd:  conversionCRD("e", nil),
		},
		{
			name: "conversion None",
			crd:  conversionCRD("f", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			if err := o.PatchConversion([]*apiextensionsv1.CustomResourceDefinition{tc.crd}); err != nil {
				t.Fatal(err)
			}
			if tc.wantURL == "" {
				if !equality.Semantic.DeepEqual(before, tc.crd) {
					t.Errorf("PatchConversion changed a CRD that does not convert by webhook: %+v", tc.crd.Spec.Conversion)
				}
				return
			}
			cc := tc.crd.Spec.Conversion.Webhook.ClientConfig
			if cc.URL == nil || *cc.URL != tc.wantURL || cc.Service != nil || string(cc.CABundle) != string(o.LocalServingCAData) {
				t.Errorf("client config: url %v, service %v, caBundle set %t; want url %s, no service, LocalServingCAData", ptr.Deref(cc.URL, "<nil>"), cc.Service, len(cc.CABundle) > 0, tc.wantURL)
			}
		})
	}
}

func TestPrepareWebhooks(t *testing.T) {
	dirs := 0
	certDir := func() string { dirs++; return filepath.Join(t.TempDir(), strconv.Itoa(dirs)) }
	plain := conversionCRD("plain", nil)
	converted := conversionCRD("converted", webhookConversion(nil))

	// Nothing asked for, nothing to serve.
	o, err := PrepareWebhooks(nil, []*apiextensionsv1.CustomResourceDefinition{plain}, certDir)
	if err != nil || o != nil || dirs != 0 {
		t.Fatalf("PrepareWebhooks(nil, a CRD without conversion) = %v, %v, with %d directories; want nil, nil, none", o, err, dirs)
	}
	// A CRD that converts by webhook gets a server, and the directory given.
	o, err = PrepareWebhooks(nil, []*apiextensionsv1.CustomResourceDefinition{plain, converted}, certDir)
	if err != nil {
		t.Fatal(err)
	}
	if o == nil || o.LocalServingPort == 0 || filepath.Base(o.LocalServingCertDir) != "1" {
		t.Fatalf("PrepareWebhooks(nil, a CRD converting by webhook) = %+v; want options prepared in the directory given", o)
	}
	if got := ptr.Deref(converted.Spec.Conversion.Webhook.ClientConfig.URL, ""); got != "https://127.0.0.1:"+strconv.Itoa(o.LocalServingPort)+"/convert" {
		t.Errorf("conversion url %q", got)
	}
	// Options prepared already, as a restarted server is given those of the
	// one before: the same port and CA, no new directory, the caller's
	// options untouched.
	again, err := PrepareWebhooks(o, nil, certDir)
	if err != nil {
		t.Fatal(err)
	}
	if again == o || again.LocalServingPort != o.LocalServingPort || string(again.LocalServingCAData) != string(o.LocalServingCAData) || dirs != 1 {
		t.Errorf("PrepareWebhooks on prepared options: a new port, CA or directory, or the same options back")
	}
	// Their certificate directory removed with the server before's other
	// files: the same certificate in a new one.
	if err := os.RemoveAll(o.LocalServingCertDir); err != nil {
		t.Fatal(err)
	}
	rehomed, err := PrepareWebhooks(o, nil, certDir)
	if err != nil {
		t.Fatal(err)
	}
	if rehomed.LocalServingCertDir == o.LocalServingCertDir || rehomed.LocalServingPort != o.LocalServingPort || string(rehomed.LocalServingCAData) != string(o.LocalServingCAData) {
		t.Errorf("PrepareWebhooks on prepared options without their directory: dir %s, port %d; want a new dir, the same port and CA", rehomed.LocalServingCertDir, rehomed.LocalServingPort)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(rehomed.LocalServingCertDir, "tls.crt"), filepath.Join(rehomed.LocalServingCertDir, "tls.key")); err != nil {
		t.Errorf("the certificate in the new directory: %v", err)
	}
	// Options not prepared are copied, not prepared in place.
	mine := &WebhookOptions{}
	if _, err := PrepareWebhooks(mine, nil, certDir); err != nil {
		t.Fatal(err)
	}
	if mine.LocalServingPort != 0 || mine.LocalServingCAData != nil {
		t.Errorf("PrepareWebhooks prepared the caller's options in place: %+v", mine)
	}
}

// An API server that calls the suite's webhook server by another name
// (LocalServingHostExternalName) gets URLs with that name, and a
// certificate valid for both names.
func TestPrepareExternalName(t *testing.T) {
	o := &WebhookOptions{
		LocalServingHost:             "127.0.0.1",
		LocalServingHostExternalName: "host.containers.internal",
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: new("/validate")}}}},
		}},
	}
	if err := o.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Cleanup() }) //nolint:errcheck
	want := fmt.Sprintf("https://host.containers.internal:%d/validate", o.LocalServingPort)
	if got := o.ValidatingWebhooks[0].Webhooks[0].ClientConfig.URL; got == nil || *got != want {
		t.Errorf("the webhook's URL is %v, want %s", got, want)
	}
	if o.LocalServingHost != "127.0.0.1" {
		t.Errorf("LocalServingHost = %s, want 127.0.0.1, where the suite's server listens", o.LocalServingHost)
	}
	pair, err := tls.X509KeyPair(o.certificate.cert, o.certificate.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(o.LocalServingCAData)
	for _, name := range []string{"127.0.0.1", "host.containers.internal"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("the serving certificate is not valid for %s: %v", name, err)
		}
	}
}
