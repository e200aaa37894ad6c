// `kubewarden-controller`: what Kubewarden's controller and its policy server do for the
// ClusterAdmissionPolicies a user applies, on a control plane without a container runtime. It
// serves the ClusterAdmissionPolicy resource (the controller's own CRDs are not in a Go module
// this machine can fetch, so the resource is declared here with the controller's group, version,
// kind and printer columns, and a schema that keeps every field), and on every change writes the
// policy server's policies.yml, restarts the policy server with it, writes the webhook
// configurations the controller writes (package kubewarden) and marks each policy active.
//
// The policy server is restage-gate-webhook (the project's host: a fresh module instance per
// request, as policy-server does), or a real policy-server binary given with --policy-server.
// Every module reference is served from the local --wasm file: nothing is pulled.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/certs"
	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/cluster"
	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/kubewarden"
)

var clusterAdmissionPolicies = schema.GroupVersionResource{Group: "policies.kubewarden.io", Version: "v1", Resource: "clusteradmissionpolicies"}

// managedBy labels the webhook configurations this controller owns, so it deletes only those.
const managedBy = "restage-gate.test/managed-by"

func runKubewardenController(args []string) error {
	c := newComponent("kubewarden-controller")
	flags := c.flags
	dir := flags.String("dir", "", "the run's directory (its pki/ holds the authority)")
	wasm := flags.String("wasm", "", "the module every policy runs")
	webhookServer := flags.String("webhook-server", "", "restage-gate-webhook")
	policyServer := flags.String("policy-server", "", "a real policy-server binary, instead of restage-gate-webhook")
	config, ctx, stop, err := c.start(args)
	if err != nil {
		return err
	}
	defer stop()
	if *wasm == "" || (*webhookServer == "" && *policyServer == "") {
		return errors.New("--wasm and --webhook-server (or --policy-server) are required")
	}
	if err := installCRDs(ctx, config, policyCRD()); err != nil {
		return err
	}
	authority, err := certs.LoadAuthority(filepath.Join(*dir, "pki"))
	if err != nil {
		return err
	}
	work := filepath.Join(*dir, "policy-server")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	serving, err := authority.Serving("policy-server")
	if err != nil {
		return err
	}
	certFile, keyFile, err := serving.Write(work, "serving")
	if err != nil {
		return err
	}
	r := &policyReconciler{
		dynamic:    dynamic.NewForConfigOrDie(config),
		client:     kubernetes.NewForConfigOrDie(config),
		caBundle:   authority.CertPEM,
		work:       work,
		wasm:       *wasm,
		certFile:   certFile,
		keyFile:    keyFile,
		ourServer:  *webhookServer,
		realPS:     *policyServer,
		kubeconfig: *c.kubeconfig,
	}
	defer r.stopServer()
	// A poll rather than an informer: a handful of objects, and each change restarts a server
	// that takes far longer than a list.
	return wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := r.reconcile(ctx); err != nil {
			klog.Errorf("reconciling ClusterAdmissionPolicies: %v", err)
		}
		return false, nil
	})
}

// policyCRD declares the ClusterAdmissionPolicy resource.
func policyCRD() *apiextensionsv1.CustomResourceDefinition {
	keep := true
	column := func(name, path string) apiextensionsv1.CustomResourceColumnDefinition {
		return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: "string", JSONPath: path}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusteradmissionpolicies.policies.kubewarden.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "policies.kubewarden.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "clusteradmissionpolicies", Singular: "clusteradmissionpolicy",
				Kind: "ClusterAdmissionPolicy", ListKind: "ClusterAdmissionPolicyList", ShortNames: []string{"cap"},
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &keep, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							// The defaults the controller's CRD declares.
							"policyServer":    {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"default"`)}},
							"mode":            {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"protect"`)}},
							"backgroundAudit": {Type: "boolean", Default: &apiextensionsv1.JSON{Raw: []byte(`true`)}},
							"timeoutSeconds":  {Type: "integer", Format: "int32", Default: &apiextensionsv1.JSON{Raw: []byte(`10`)}},
						}},
						"status": {Type: "object", XPreserveUnknownFields: &keep},
					},
				}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					column("Policy Server", ".spec.policyServer"),
					{Name: "Mutating", Type: "boolean", JSONPath: ".spec.mutating"},
					{Name: "BackgroundAudit", Type: "boolean", JSONPath: ".spec.backgroundAudit"},
					column("Mode", ".spec.mode"),
					column("Observed mode", ".status.mode"),
					column("Status", ".status.policyStatus"),
				},
			}},
		},
	}
	return crd
}

type policyReconciler struct {
	dynamic    dynamic.Interface
	client     kubernetes.Interface
	caBundle   []byte
	work       string
	wasm       string
	certFile   string
	keyFile    string
	ourServer  string
	realPS     string
	kubeconfig string

	served  []byte // the policies.yml the running server was started with
	server  *exec.Cmd
	exited  chan struct{}
	address string
}

func (r *policyReconciler) reconcile(ctx context.Context) error {
	list, err := r.dynamic.Resource(clusterAdmissionPolicies).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var documents [][]byte
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		doc, err := yaml.Marshal(item.Object)
		if err != nil {
			return err
		}
		documents = append(documents, doc)
	}
	manifest := filepath.Join(r.work, "clusteradmissionpolicies.yaml")
	if err := os.WriteFile(manifest, bytes.Join(documents, []byte("\n---\n")), 0o644); err != nil {
		return err
	}
	policies, err := kubewarden.ReadPolicies(manifest)
	if err != nil {
		return r.markAll(ctx, live(list.Items), "pending", err.Error())
	}
	config, err := kubewarden.PolicyServerConfig(policies, func(kubewarden.Policy) string { return r.wasm })
	if err != nil {
		return err
	}
	if r.server == nil || !bytes.Equal(config, r.served) || r.serverExited() {
		if err := r.restartServer(ctx, config); err != nil {
			// As a policy server that does not start: the policies stay pending, and the
			// server that ran before keeps serving what it served.
			return r.markAll(ctx, live(list.Items), "pending", err.Error())
		}
	}
	mutating, validating := kubewarden.WebhookConfigurations(policies, "https://"+r.address, r.caBundle)
	if err := r.applyWebhooks(ctx, mutating, validating); err != nil {
		return err
	}
	if err := r.finalize(ctx, list.Items); err != nil {
		return err
	}
	return r.markAll(ctx, live(list.Items), "active", "")
}

// finalizer is the controller's: a policy being deleted stays until its webhook is gone, so
// `kubectl delete clusteradmissionpolicy` returns once the API server no longer calls it
// (kubewarden-controller internal/constants/constants.go, KubewardenFinalizer).
const finalizer = "kubewarden.io/finalizer"

// finalize adds the finalizer to each live policy and removes it from each deleted one, whose
// webhook applyWebhooks has just removed.
func (r *policyReconciler) finalize(ctx context.Context, items []unstructured.Unstructured) error {
	for i := range items {
		item := &items[i]
		finalizers := item.GetFinalizers()
		has := false
		var others []string
		for _, f := range finalizers {
			if f == finalizer {
				has = true
			} else {
				others = append(others, f)
			}
		}
		deleted := item.GetDeletionTimestamp() != nil
		switch {
		case deleted && has:
			item.SetFinalizers(others)
		case !deleted && !has:
			item.SetFinalizers(append(finalizers, finalizer))
		default:
			continue
		}
		updated, err := r.dynamic.Resource(clusterAdmissionPolicies).Update(ctx, item, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		*item = *updated
	}
	return nil
}

// live is the policies not being deleted.
func live(items []unstructured.Unstructured) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, item := range items {
		if item.GetDeletionTimestamp() == nil {
			out = append(out, item)
		}
	}
	return out
}

func (r *policyReconciler) serverExited() bool {
	if r.exited == nil {
		return true
	}
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// restartServer starts a server with config and, once it answers, stops the one before it.
func (r *policyReconciler) restartServer(ctx context.Context, config []byte) error {
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	policiesFile := filepath.Join(r.work, fmt.Sprintf("policies-%d.yml", port))
	if err := os.WriteFile(policiesFile, config, 0o644); err != nil {
		return err
	}
	address := fmt.Sprintf("127.0.0.1:%d", port)
	var cmd *exec.Cmd
	var ready func() error
	if r.realPS != "" {
		probe, err := cluster.FreePort()
		if err != nil {
			return err
		}
		cmd = exec.Command(r.realPS, "--policies", policiesFile, "--addr", "127.0.0.1", "--port", strconv.Itoa(port),
			"--readiness-probe-port", strconv.Itoa(probe), "--cert-file", r.certFile, "--key-file", r.keyFile,
			"--policies-download-dir", r.work)
		// policy-server connects to a cluster at start (context-aware policies): this one.
		cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig)
		ready = func() error {
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/readiness", probe))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return errors.New(resp.Status)
			}
			return nil
		}
	} else {
		readyFile := filepath.Join(r.work, fmt.Sprintf("ready-%d", port))
		cmd = exec.Command(r.ourServer, "--policies", policiesFile, "--cert", r.certFile, "--key", r.keyFile,
			"--listen", address, "--ready-file", readyFile)
		ready = func() error {
			_, err := os.Stat(readyFile)
			return err
		}
	}
	log, err := os.OpenFile(filepath.Join(r.work, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	// policy-server keeps its caches (sigstore-data, downloads) in its working directory.
	cmd.Dir = r.work
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(log, "== starting %s\n", cmd.String())
	// Pdeathsig follows the thread that forks: keep this goroutine on its thread meanwhile.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("the policy server stopped: %s", cmd.ProcessState)
		default:
		}
		return ready() == nil, nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("%w (see %s)", err, filepath.Join(r.work, "server.log"))
	}
	r.stopServer()
	r.server, r.exited, r.served, r.address = cmd, exited, config, address
	return nil
}

func (r *policyReconciler) stopServer() {
	if r.server == nil {
		return
	}
	_ = r.server.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		_ = r.server.Process.Kill()
		<-r.exited
	}
	r.server = nil
}

// applyWebhooks makes the cluster's webhook configurations of this controller exactly these.
func (r *policyReconciler) applyWebhooks(ctx context.Context, mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration) error {
	api := r.client.AdmissionregistrationV1()
	keep := map[string]bool{}
	for i := range mutating {
		want := &mutating[i]
		label(&want.ObjectMeta)
		keep["m/"+want.Name] = true
		got, err := api.MutatingWebhookConfigurations().Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.MutatingWebhookConfigurations().Create(ctx, want, metav1.CreateOptions{})
		case err == nil && !reflect.DeepEqual(got.Webhooks, want.Webhooks):
			want.ResourceVersion = got.ResourceVersion
			_, err = api.MutatingWebhookConfigurations().Update(ctx, want, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
	}
	for i := range validating {
		want := &validating[i]
		label(&want.ObjectMeta)
		keep["v/"+want.Name] = true
		got, err := api.ValidatingWebhookConfigurations().Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.ValidatingWebhookConfigurations().Create(ctx, want, metav1.CreateOptions{})
		case err == nil && !reflect.DeepEqual(got.Webhooks, want.Webhooks):
			want.ResourceVersion = got.ResourceVersion
			_, err = api.ValidatingWebhookConfigurations().Update(ctx, want, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
	}
	selector := metav1.ListOptions{LabelSelector: managedBy + "=kubewarden-controller"}
	ms, err := api.MutatingWebhookConfigurations().List(ctx, selector)
	if err != nil {
		return err
	}
	for _, m := range ms.Items {
		if !keep["m/"+m.Name] {
			if err := api.MutatingWebhookConfigurations().Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	vs, err := api.ValidatingWebhookConfigurations().List(ctx, selector)
	if err != nil {
		return err
	}
	for _, v := range vs.Items {
		if !keep["v/"+v.Name] {
			if err := api.ValidatingWebhookConfigurations().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

func label(meta *metav1.ObjectMeta) {
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[managedBy] = "kubewarden-controller"
}

// markAll writes each policy's status as the controller reports it: `policyStatus` and the
// mode it is served in.
func (r *policyReconciler) markAll(ctx context.Context, items []unstructured.Unstructured, status, message string) error {
	for i := range items {
		item := &items[i]
		mode, _, _ := unstructured.NestedString(item.Object, "spec", "mode")
		if mode == "" {
			mode = "protect"
		}
		current, _, _ := unstructured.NestedString(item.Object, "status", "policyStatus")
		currentMode, _, _ := unstructured.NestedString(item.Object, "status", "mode")
		currentMessage, _, _ := unstructured.NestedString(item.Object, "status", "message")
		if current == status && currentMode == mode && currentMessage == message {
			continue
		}
		_ = unstructured.SetNestedField(item.Object, status, "status", "policyStatus")
		_ = unstructured.SetNestedField(item.Object, mode, "status", "mode")
		if message != "" {
			_ = unstructured.SetNestedField(item.Object, message, "status", "message")
		} else {
			unstructured.RemoveNestedField(item.Object, "status", "message")
		}
		if _, err := r.dynamic.Resource(clusterAdmissionPolicies).UpdateStatus(ctx, item, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}
