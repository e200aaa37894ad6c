// The runtime's admission projector (`/interceptor`, controllers/webhook_controller.go's
// AdmissionProjectorWebhook): on every CREATE and UPDATE of a workload it projects all live
// ServiceBindings that target the workload, or were projected into it, into the incoming object
// and answers with a JSON Patch, so a write from any other controller gets the bindings folded in.

package servicebinding

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	jsonpatchcreate "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// WebhookPath is where the runtime serves its admission projector.
const WebhookPath = "/interceptor"

// maxReviewBytes bounds a request body; the API server sends at most a few MiB.
const maxReviewBytes = 32 << 20

// BindingSource lists the ServiceBindings of a namespace.
type BindingSource interface {
	Bindings(ctx context.Context, namespace string) ([]Binding, error)
}

// StaticBindings is a BindingSource over a fixed list, for tests that run no controller.
type StaticBindings []Binding

// Bindings returns the bindings of the namespace.
func (s StaticBindings) Bindings(_ context.Context, namespace string) ([]Binding, error) {
	var out []Binding
	for _, b := range s {
		if b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out, nil
}

// WebhookHandler answers admission.k8s.io/v1 AdmissionReviews for workloads, reading bindings
// from source (a *Controller in a running harness).
func WebhookHandler(source BindingSource) http.Handler {
	return &interceptor{source: source}
}

type interceptor struct {
	source BindingSource
}

func (h *interceptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "only POST is served", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	review := admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "expected an admission.k8s.io/v1 AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	log := klog.FromContext(r.Context()).WithName("servicebinding-webhook").WithValues(
		"uid", review.Request.UID, "kind", review.Request.Kind, "operation", review.Request.Operation,
		"namespace", review.Request.Namespace, "name", review.Request.Name)
	ctx := klog.NewContext(r.Context(), log)

	response := Admit(ctx, h.source, review.Request)
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: response,
	}
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// Admit is the projector's decision on one request: allowed, with a JSON Patch when projecting
// the bindings changed the object; denied with code 500 when that failed.
func Admit(ctx context.Context, source BindingSource, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	patch, err := admit(ctx, source, req)
	if err != nil {
		klog.FromContext(ctx).Error(err, "admission projection failed")
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusInternalServerError, Message: err.Error()}
		return resp
	}
	if patch != nil {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch = patch
		resp.PatchType = &pt
	}
	return resp
}

func admit(ctx context.Context, source BindingSource, req *admissionv1.AdmissionRequest) ([]byte, error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	workload := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, workload); err != nil {
		return nil, err
	}
	original := workload.DeepCopy()

	namespace := workload.GetNamespace()
	if namespace == "" {
		namespace = req.Namespace
	}
	bindings, err := source.Bindings(ctx, namespace)
	if err != nil {
		return nil, err
	}
	gk := schema.FromAPIVersionAndKind(workload.GetAPIVersion(), workload.GetKind()).GroupKind()
	for _, b := range bindings {
		// the runtime indexes bindings by the group and kind of their workload
		ref := b.Spec.Workload
		if schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind() != gk {
			continue
		}
		if !activeFor(b, workload) {
			continue
		}
		b.Default()
		if err := Project(workload, b); err != nil {
			return nil, err
		}
	}
	if equality.Semantic.DeepEqual(original, workload) {
		return nil, nil
	}
	mutated, err := json.Marshal(workload)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatchcreate.CreatePatch(raw, mutated)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("mutating workload", "operations", len(ops))
	return json.Marshal(ops)
}

// activeFor is the webhook's choice of bindings: not being deleted, and already projected into
// the workload or naming or selecting it.
func activeFor(b Binding, workload *unstructured.Unstructured) bool {
	if b.DeletionTimestamp != nil {
		return false
	}
	if IsProjected(workload, b) {
		return true
	}
	ref := b.Spec.Workload
	// an unnamed object (generateName) is taken up by every binding by selector here, as in the
	// runtime; Project then applies only those whose selector matches
	if ref.Name == workload.GetName() {
		return true
	}
	if ref.Selector == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(ref.Selector)
	return err == nil && selector.Matches(labels.Set(workload.GetLabels()))
}

// ServeWebhook serves WebhookHandler(source) at WebhookPath over HTTPS on the loopback address
// until ctx ends. addr is host:port with a loopback host (or none, meaning 127.0.0.1) and port 0
// picks a free port. Once listening it writes the address it bound to readyFile, when given.
func ServeWebhook(ctx context.Context, addr, certFile, keyFile, readyFile string, source BindingSource) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("webhook address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("webhook address %q: the webhook serves on a loopback address only", addr)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, WebhookHandler(source))
	server := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// HTTP/1.1 only, as the runtime configures its webhook server
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"},
		},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		BaseContext:  func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- server.ServeTLS(listener, "", "") }()
	if readyFile != "" {
		if err := writeFileAtomic(readyFile, []byte(listener.Addr().String()+"\n")); err != nil {
			_ = server.Close()
			return err
		}
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// writeFileAtomic makes the file appear whole, so a reader polling for it never sees it half
// written.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
