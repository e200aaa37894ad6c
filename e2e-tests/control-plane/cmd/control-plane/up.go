// `up` and `down`: the playground. `up` starts the control plane with restage-gate and the
// binding runtime installed and runs until it is told to stop; `down` tells it, from another
// shell, and waits until every process it started is gone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/cluster"
)

func up(args []string) error {
	flags := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := flags.String("dir", "", "the run's directory (certificates, kubeconfig, logs)")
	nodes := flags.Int("nodes", 3, "how many nodes")
	wasm := flags.String("wasm", "", "the module Kubewarden's stand-in serves for every policy")
	webhookServer := flags.String("webhook-server", "", "restage-gate-webhook, the policy server")
	policyServer := flags.String("policy-server", "", "a real policy-server binary, instead of restage-gate-webhook")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *wasm == "" || (*webhookServer == "" && *policyServer == "") {
		return errors.New("--dir, --wasm and --webhook-server (or --policy-server) are required")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	if pid, alive := running(abs); alive {
		return fmt.Errorf("a control plane already runs from %s (pid %d): stop it with `control-plane down --dir %s`", abs, pid, abs)
	}
	if err := os.WriteFile(filepath.Join(abs, "up.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(abs, "up.pid"))
	// A run starts from nothing: etcd's data of an earlier run would keep webhook configurations
	// that name that run's ports and certificate authority.
	for _, stale := range []string{"ready", "etcd", "pki", "policy-server", "servicebinding", "bin"} {
		if err := os.RemoveAll(filepath.Join(abs, stale)); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Println("== starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the node agent, the binding runtime and Kubewarden's stand-in on 127.0.0.1")
	controller := []string{"kubewarden-controller", "--dir", abs, "--wasm", *wasm, "--webhook-server", *webhookServer}
	if *policyServer != "" {
		controller = append(controller, "--policy-server", *policyServer)
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: abs, Binary: self, Nodes: *nodes, Components: []cluster.Component{
		{Name: "kubewarden-controller", Args: controller},
		{Name: "servicebinding-webhook", Args: []string{"servicebinding", "--part", "webhook", "--dir", abs}},
		{Name: "servicebinding-controller", Args: []string{"servicebinding", "--part", "controller", "--dir", abs}},
		{Name: "argo-rollouts", Args: []string{"argo-rollouts"}},
	}})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := waitForComponents(ctx, c); err != nil {
		return err
	}
	kubectl := filepath.Join(abs, "bin", "kubectl")
	_ = os.Remove(kubectl)
	if err := os.Symlink(self, kubectl); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(abs, "ready"), []byte(c.Kubeconfig+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("kubectl of the same release: %s\n", kubectl)
	fmt.Printf("KUBECONFIG=%s\n", c.Kubeconfig)
	for {
		select {
		case <-ctx.Done():
			fmt.Println("== stopping")
			return nil
		case <-time.After(time.Second):
			if err := c.Exited(); err != nil {
				return err
			}
		}
	}
}

func down(args []string) error {
	flags := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := flags.String("dir", "", "the directory `up` ran in")
	if err := flags.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	pid, alive := running(abs)
	if !alive {
		fmt.Printf("no control plane runs from %s\n", abs)
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			fmt.Printf("stopped the control plane of %s\n", abs)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Its components die with it (the kernel kills them when their parent dies).
	_ = syscall.Kill(pid, syscall.SIGKILL)
	fmt.Printf("killed the control plane of %s\n", abs)
	return nil
}

// running reads DIR/up.pid and says whether that process is still alive.
func running(dir string) (int, bool) {
	text, err := os.ReadFile(filepath.Join(dir, "up.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(text)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// waitForComponents waits until the components have installed what a user applies next: the
// CRDs and the projector's webhook configuration.
func waitForComponents(ctx context.Context, c *cluster.Cluster) error {
	config, err := c.RESTConfig()
	if err != nil {
		return err
	}
	extensions, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	crds := []string{"clusteradmissionpolicies.policies.kubewarden.io", "servicebindings.servicebinding.io", "rollouts.argoproj.io"}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		for _, name := range crds {
			if _, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, nil
			}
		}
		_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, projectorWebhook, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the components never installed their resources: %w", err)
	}
	for _, name := range crds {
		if err := waitEstablished(ctx, extensions, name); err != nil {
			return err
		}
	}
	return nil
}
