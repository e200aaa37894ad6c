// `servicebinding`: the servicebinding.io runtime of the control plane: its CRDs, the
// ServiceBinding controller that projects bindings into workloads (`--part controller`), and the
// projector's admission webhook (`--part webhook`), each its own process so that a scenario can
// hold the controller back (SIGSTOP) while the webhook goes on folding bindings into other writes,
// as a busy controller does (package servicebinding says what is the runtime's and what stands
// in for it).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/certs"
	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/cluster"
	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/servicebinding"
)

// ProjectorWebhook is the name of the runtime's MutatingWebhookConfiguration. The API server
// calls mutating configurations in the order of their names, so Kubewarden's
// (`clusterwide-…`) comes first.
const projectorWebhook = "servicebinding-admission-projector"

func runServiceBinding(args []string) error {
	c := newComponent("servicebinding")
	flags := c.flags
	dir := flags.String("dir", "", "the run's directory (its pki/ holds the authority)")
	part := flags.String("part", "", "controller or webhook")
	config, ctx, stop, err := c.start(args)
	if err != nil {
		return err
	}
	defer stop()
	if *part != "controller" && *part != "webhook" {
		return fmt.Errorf("--part is controller or webhook, not %q", *part)
	}

	crds, err := servicebinding.CRDs()
	if err != nil {
		return err
	}
	if err := installCRDs(ctx, config, crds...); err != nil {
		return err
	}

	if *part == "controller" {
		return servicebinding.RunController(ctx, config)
	}
	source, err := newBindingCache(ctx, config)
	if err != nil {
		return err
	}
	authority, err := certs.LoadAuthority(filepath.Join(*dir, "pki"))
	if err != nil {
		return err
	}
	work := filepath.Join(*dir, "servicebinding")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	serving, err := authority.Serving("servicebinding-webhook")
	if err != nil {
		return err
	}
	certFile, keyFile, err := serving.Write(work, "serving")
	if err != nil {
		return err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	readyFile := filepath.Join(work, "ready")
	_ = os.Remove(readyFile)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	served := make(chan error, 1)
	go func() { served <- servicebinding.ServeWebhook(ctx, addr, certFile, keyFile, readyFile, source) }()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-served:
			return false, fmt.Errorf("the projector's webhook stopped: %v", err)
		default:
		}
		_, err := os.Stat(readyFile)
		return err == nil, nil
	}); err != nil {
		return err
	}
	webhooks := kubernetes.NewForConfigOrDie(config).AdmissionregistrationV1().MutatingWebhookConfigurations()
	configuration := servicebinding.MutatingWebhookConfiguration("https://"+addr+"/interceptor", authority.CertPEM, projectorWebhook)
	if _, err := webhooks.Create(ctx, configuration, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		return nil
	}
}

// bindingCache is what the webhook reads the ServiceBindings from: a watch of them all.
type bindingCache struct {
	informer cache.SharedIndexInformer
}

func newBindingCache(ctx context.Context, config *rest.Config) (*bindingCache, error) {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := factory.ForResource(servicebinding.ServiceBindingsResource).Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, ctx.Err()
	}
	return &bindingCache{informer: informer}, nil
}

// Bindings lists a namespace's ServiceBindings by name.
func (b *bindingCache) Bindings(_ context.Context, namespace string) ([]servicebinding.Binding, error) {
	objs, err := b.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	var out []servicebinding.Binding
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		binding, err := servicebinding.BindingFromUnstructured(u)
		if err != nil {
			return nil, err
		}
		out = append(out, binding)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
