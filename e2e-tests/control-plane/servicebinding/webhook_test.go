// Tests of the admission projector: the JSON Patch it answers with, which bindings it folds in,
// and the HTTPS server it runs on.

package servicebinding

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func review(t *testing.T, op admissionv1.Operation, object *unstructured.Unstructured) []byte {
	t.Helper()
	raw, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "req-1",
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: object.GetKind()},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			Name:      object.GetName(),
			Namespace: object.GetNamespace(),
			Operation: op,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func post(t *testing.T, h http.Handler, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	return decodeReview(t, rec.Body.Bytes())
}

func decodeReview(t *testing.T, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	out := admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("not an AdmissionReview response: %s", body)
	}
	if out.Response.UID != "req-1" {
		t.Fatalf("response uid %q", out.Response.UID)
	}
	return out.Response
}

// patched applies the response's JSON Patch to object.
func patched(t *testing.T, object *unstructured.Unstructured, resp *admissionv1.AdmissionResponse) map[string]interface{} {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v", resp.PatchType)
	}
	raw, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	result := map[string]interface{}{}
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatal(err)
	}
	return result
}

func TestWebhookPatchAppliedEqualsTheProjectedObject(t *testing.T) {
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		incoming := referenceWorkload(t, "statefulset-0-unbound.json")
		resp := post(t, WebhookHandler(StaticBindings{upsi}), review(t, op, incoming))

		want := incoming.DeepCopy()
		if err := Project(want, upsi); err != nil {
			t.Fatal(err)
		}
		requireSame(t, string(op)+" patched object", patched(t, incoming, resp), generic(t, want))
	}
}

func TestWebhookFoldsTheBindingIntoAnotherControllersWrite(t *testing.T) {
	// Korifi's runner writes its desired StatefulSet without the projection; the webhook puts it
	// back, and the result is what the runtime left stored
	incoming := referenceWorkload(t, "statefulset-0-unbound.json")
	resp := post(t, WebhookHandler(StaticBindings{referenceBinding(t, "servicebinding-user-provided.json")}), review(t, admissionv1.Update, incoming))
	got := patched(t, incoming, resp)
	u := &unstructured.Unstructured{Object: got}
	want := stored(t, referenceWorkload(t, "statefulset-1-bound-upsi.json"))
	requireSame(t, "spec.template", at(stored(t, u), "spec", "template"), at(want, "spec", "template"))
}

func TestWebhookLeavesWorkloadsNoBindingTargets(t *testing.T) {
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	elsewhere := upsi
	elsewhere.Namespace = "another-namespace"
	deployments := upsi
	deployments.Spec.Workload.Kind = "Deployment"
	deleting := upsi
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for name, source := range map[string]StaticBindings{
		"no bindings":              nil,
		"binding in another space": {elsewhere},
		"binding for deployments":  {deployments},
		"binding being deleted":    {deleting},
	} {
		resp := post(t, WebhookHandler(source), review(t, admissionv1.Update, referenceWorkload(t, "statefulset-0-unbound.json")))
		if !resp.Allowed || resp.Patch != nil || resp.PatchType != nil {
			t.Fatalf("%s: got %+v", name, resp)
		}
	}
}

func TestWebhookRemovesAProjectionWhoseBindingNoLongerSelectsTheWorkload(t *testing.T) {
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	moved := upsi
	moved.Spec.Workload.Selector = upsi.Spec.Workload.Selector.DeepCopy()
	moved.Spec.Workload.Selector.MatchLabels["korifi.cloudfoundry.org/app-guid"] = "another-app"
	incoming := referenceWorkload(t, "statefulset-1-bound-upsi.json")
	got := &unstructured.Unstructured{Object: patched(t, incoming, post(t, WebhookHandler(StaticBindings{moved}), review(t, admissionv1.Update, incoming)))}
	if IsProjected(got, upsi) {
		t.Fatal("projection kept")
	}
	if strings.Contains(show(got.Object), "servicebinding-"+string(upsi.UID)) {
		t.Fatal("volume kept")
	}
}

func TestWebhookDeniesWhatItCannotProject(t *testing.T) {
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	incoming := referenceWorkload(t, "statefulset-0-unbound.json")
	if err := unstructured.SetNestedField(incoming.Object, "not a list", "spec", "template", "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
	resp := post(t, WebhookHandler(StaticBindings{upsi}), review(t, admissionv1.Update, incoming))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError {
		t.Fatalf("got %+v", resp)
	}
}

func TestWebhookRejectsWhatIsNotAnAdmissionReview(t *testing.T) {
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, WebhookPath, nil),
		httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`{"kind":"AdmissionReview"}`)),
	} {
		rec := httptest.NewRecorder()
		WebhookHandler(StaticBindings{}).ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			t.Fatalf("%s answered OK", req.Method)
		}
	}
}

func TestServeWebhookServesHTTPSOnLoopbackAndReportsItsAddress(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	readyFile := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	go func() { served <- ServeWebhook(ctx, "127.0.0.1:0", certFile, keyFile, readyFile, StaticBindings{upsi}) }()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" {
		if data, err := os.ReadFile(readyFile); err == nil {
			addr = strings.TrimSpace(string(data))
		} else if time.Now().After(deadline) {
			t.Fatal("ready file never appeared")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	incoming := referenceWorkload(t, "statefulset-0-unbound.json")
	res, err := client.Post("https://"+addr+WebhookPath, "application/json", bytes.NewReader(review(t, admissionv1.Create, incoming)))
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	got := &unstructured.Unstructured{Object: patched(t, incoming, decodeReview(t, body.Bytes()))}
	if !IsProjected(got, upsi) {
		t.Fatal("not projected")
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	if err := ServeWebhook(context.Background(), "0.0.0.0:0", certFile, keyFile, "", StaticBindings{}); err == nil {
		t.Fatal("served on a non-loopback address")
	}
}

func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "servicebinding-webhook"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(dir, "tls.crt")
	keyFile = filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
