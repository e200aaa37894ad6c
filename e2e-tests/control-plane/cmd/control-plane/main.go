// control-plane: a Kubernetes control plane on 127.0.0.1, built from the pinned k8s.io modules,
// for restage-gate's tests and playground. One binary holds every component, so the k8s.io code
// they share is compiled and linked once:
//
//	control-plane up --dir DIR --wasm MODULE --webhook-server BIN [--policy-server BIN] [--nodes N]
//	                                                               start everything, print KUBECONFIG=…, run until stopped
//	control-plane down --dir DIR                                   stop what `up` started in DIR
//	control-plane etcd | kube-apiserver | kube-controller-manager | kube-scheduler | node-agent ARGS...
//	control-plane kubewarden-controller | servicebinding | argo-rollouts ARGS...
//	kubectl ARGS...                                                (this binary, called as kubectl)
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if filepath.Base(os.Args[0]) == "kubectl" {
		os.Exit(runKubectl())
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	sub, args := os.Args[1], os.Args[2:]
	var err error
	switch sub {
	case "up":
		err = up(args)
	case "down":
		err = down(args)
	case "etcd":
		err = runEtcd(args)
	case "kube-apiserver":
		err = runAPIServer(args)
	case "kube-controller-manager":
		err = runControllerManager(args)
	case "kube-scheduler":
		err = runScheduler(args)
	case "node-agent":
		err = runNodeAgent(args)
	case "kubewarden-controller":
		err = runKubewardenController(args)
	case "servicebinding":
		err = runServiceBinding(args)
	case "argo-rollouts":
		err = runArgoRollouts(args)
	case "kubectl":
		os.Args = append([]string{"kubectl"}, args...)
		os.Exit(runKubectl())
	default:
		fmt.Fprintf(os.Stderr, "control-plane: unknown command %q\n%s\n", sub, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "control-plane %s: %v\n", sub, err)
		os.Exit(1)
	}
}

const usage = `usage: control-plane up --dir DIR --wasm MODULE --webhook-server BIN [--policy-server BIN] [--nodes N]
       control-plane down --dir DIR`
