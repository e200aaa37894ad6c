// The components of the control plane, each the upstream command of the pinned k8s.io release
// run with the arguments the cluster package gives it, and kubectl as users run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/nodeagent"
)

// runEtcd serves one etcd member from its Go module's server, on plain HTTP on loopback.
func runEtcd(args []string) error {
	flags := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := flags.String("data-dir", "", "etcd's data directory")
	clientURL := flags.String("client-url", "", "http://127.0.0.1:PORT for clients")
	peerURL := flags.String("peer-url", "", "http://127.0.0.1:PORT for peers")
	if err := flags.Parse(args); err != nil {
		return err
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		return err
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.LogLevel = "warn"
	// The metrics listener would bind a port of its own; nothing reads it here.
	cfg.ListenMetricsUrls = nil
	server, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer server.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case <-server.Server.ReadyNotify():
	case <-ctx.Done():
		return nil
	}
	select {
	case err := <-server.Err():
		return err
	case <-ctx.Done():
		return nil
	}
}

func runAPIServer(args []string) error {
	cmd := apiserver.NewAPIServerCommand()
	cmd.SetArgs(args)
	return exitCode(cli.Run(cmd))
}

func runControllerManager(args []string) error {
	cmd := controllermanager.NewControllerManagerCommand()
	cmd.SetArgs(args)
	return exitCode(cli.Run(cmd))
}

func runScheduler(args []string) error {
	cmd := scheduler.NewSchedulerCommand()
	cmd.SetArgs(args)
	return exitCode(cli.Run(cmd))
}

// runKubectl is kubectl of the pinned release, as `kubectl` on a user's PATH runs it.
func runKubectl() int {
	return cli.Run(kubectlcmd.NewDefaultKubectlCommand())
}

func runNodeAgent(args []string) error {
	c := newComponent("node-agent")
	nodes := c.flags.Int("nodes", 3, "how many nodes to register")
	config, ctx, stop, err := c.start(args)
	if err != nil {
		return err
	}
	defer stop()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return nodeagent.Run(ctx, client, *nodes)
}

// component is how each component that talks to the API server starts: its own flags and
// --kubeconfig, the admin's client configuration, and a context that ends when the control
// plane stops it.
type component struct {
	flags      *flag.FlagSet
	kubeconfig *string
}

func newComponent(name string) *component {
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	return &component{flags: flags, kubeconfig: flags.String("kubeconfig", "", "the admin kubeconfig")}
}

// start parses the arguments and connects; stop releases the context.
func (c *component) start(args []string) (*rest.Config, context.Context, context.CancelFunc, error) {
	if err := c.flags.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	config, err := clientcmd.BuildConfigFromFlags("", *c.kubeconfig)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	return config, ctx, stop, nil
}

func exitCode(code int) error {
	if code != 0 {
		return fmt.Errorf("exit status %d", code)
	}
	return nil
}
