// Package cluster starts and stops a Kubernetes control plane on 127.0.0.1 for the tests and the
// playground: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from the
// pinned k8s.io modules, the node agent that runs pods without a container runtime, and the
// components a scenario asks for (the binding runtime, Kubewarden's stand-in). Everything lives
// in one directory: certificates, kubeconfigs, etcd's data, one log per component.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/certs"
)

// Options says what to start.
type Options struct {
	// Dir holds everything of the run; it is created if missing.
	Dir string
	// Binary is the harness binary, started again with a subcommand per component.
	Binary string
	// Nodes is how many nodes the node agent registers.
	Nodes int
	// Components are started after the control plane is ready, in order, each given the
	// admin kubeconfig with --kubeconfig.
	Components []Component
}

// Component is one more process of the harness binary.
type Component struct {
	Name string
	Args []string
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	// Authority signs the serving certificates of webhooks the API server calls.
	Authority *certs.Authority
	Server    string
	processes []*process
}

// Start brings up a control plane and waits until the API server is ready. On error every
// process already started is stopped.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	for _, sub := range []string{"pki", "logs", "bin"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	c = &Cluster{Dir: opts.Dir}
	defer func() {
		if err != nil {
			c.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, filepath.Join(opts.Dir, "logs"))
		}
	}()
	if err := c.writePKI(); err != nil {
		return c, err
	}
	ports := map[string]int{}
	for _, name := range []string{"etcd-client", "etcd-peer", "apiserver", "controller-manager", "scheduler"} {
		if ports[name], err = FreePort(); err != nil {
			return c, err
		}
	}
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", ports["apiserver"])
	pki := func(name string) string { return filepath.Join(opts.Dir, "pki", name) }
	logs := filepath.Join(opts.Dir, "logs")

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports["etcd-client"])
	etcd, err := startProcess(logs, "etcd", opts.Binary, "etcd",
		"--data-dir", filepath.Join(opts.Dir, "etcd"),
		"--client-url", etcdURL,
		"--peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports["etcd-peer"]))
	if err != nil {
		return c, err
	}
	c.processes = append(c.processes, etcd)
	if err := waitFor(ctx, etcd, "etcd", func() error { return httpGet(nil, etcdURL+"/health") }); err != nil {
		return c, err
	}

	apiserver, err := startProcess(logs, "kube-apiserver", opts.Binary, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports["apiserver"]),
		"--tls-cert-file="+pki("apiserver.crt"),
		"--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		// Read by the controller manager's and the scheduler's delegated authentication.
		"--requestheader-client-ca-file="+pki("ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki("service-account.pub"),
		"--service-account-signing-key-file="+pki("service-account.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		// The API server's own endpoint would be a loopback address, which Endpoints refuse;
		// nothing in the cluster reaches the API server through its Service.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(opts.Dir, "pki", "apiserver-generated"))
	if err != nil {
		return c, err
	}
	c.processes = append(c.processes, apiserver)
	admin, err := c.writeKubeconfig("admin", "kubernetes-admin", "system:masters")
	if err != nil {
		return c, err
	}
	c.Kubeconfig = admin
	client, err := c.httpClient("admin")
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, apiserver, "kube-apiserver", func() error { return httpGet(client, c.Server+"/readyz") }); err != nil {
		return c, err
	}

	delegated := []string{
		"--kubeconfig=" + admin,
		"--authentication-kubeconfig=" + admin,
		"--authorization-kubeconfig=" + admin,
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
	}
	kcm, err := startProcess(logs, "kube-controller-manager", opts.Binary, append([]string{"kube-controller-manager",
		"--secure-port=" + strconv.Itoa(ports["controller-manager"]),
		// Nodes here send no heartbeats: the node agent keeps them Ready instead.
		"--controllers=*,-node-lifecycle-controller",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki("service-account.key"),
		"--root-ca-file=" + pki("ca.crt"),
		"--cluster-signing-cert-file=" + pki("ca.crt"),
		"--cluster-signing-key-file=" + pki("ca.key"),
	}, delegated...)...)
	if err != nil {
		return c, err
	}
	c.processes = append(c.processes, kcm)
	scheduler, err := startProcess(logs, "kube-scheduler", opts.Binary, append([]string{"kube-scheduler",
		"--secure-port=" + strconv.Itoa(ports["scheduler"]),
	}, delegated...)...)
	if err != nil {
		return c, err
	}
	c.processes = append(c.processes, scheduler)
	agent, err := startProcess(logs, "node-agent", opts.Binary, "node-agent",
		"--kubeconfig="+admin, "--nodes="+strconv.Itoa(opts.Nodes))
	if err != nil {
		return c, err
	}
	c.processes = append(c.processes, agent)
	for _, component := range opts.Components {
		p, err := startProcess(logs, component.Name, opts.Binary, append(component.Args, "--kubeconfig="+admin)...)
		if err != nil {
			return c, err
		}
		c.processes = append(c.processes, p)
	}
	return c, nil
}

// Stop ends every process, the last started first.
func (c *Cluster) Stop() {
	for i := len(c.processes) - 1; i >= 0; i-- {
		c.processes[i].stop(10 * time.Second)
	}
	c.processes = nil
}

// Exited names a component that has stopped on its own, if any.
func (c *Cluster) Exited() error {
	for _, p := range c.processes {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s stopped: %v (see %s)", p.name, err, filepath.Join(c.Dir, "logs", p.name+".log"))
		}
	}
	return nil
}

// Signal sends a signal to the component of that name: a scenario stops (SIGSTOP) and resumes
// (SIGCONT) a controller to stand for one that is busy.
func (c *Cluster) Signal(name string, sig syscall.Signal) error {
	for _, p := range c.processes {
		if p.name == name {
			return p.cmd.Process.Signal(sig)
		}
	}
	return fmt.Errorf("no component %q", name)
}

// RESTConfig is the admin's client configuration.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
}

// Identity writes a kubeconfig for a user with a client certificate, for tests that act as
// somebody other than the admin.
func (c *Cluster) Identity(name, user string, groups ...string) (string, error) {
	return c.writeKubeconfig(name, user, groups...)
}

func (c *Cluster) writePKI() error {
	dir := filepath.Join(c.Dir, "pki")
	ca, err := certs.NewAuthority()
	if err != nil {
		return err
	}
	c.Authority = ca
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM, 0o600); err != nil {
		return err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), caKey, 0o600); err != nil {
		return err
	}
	serving, err := ca.Serving("kube-apiserver")
	if err != nil {
		return err
	}
	if _, _, err := serving.Write(dir, "apiserver"); err != nil {
		return err
	}
	_, _, err = certs.ServiceAccountKey(dir)
	return err
}

// writeKubeconfig writes DIR/NAME.kubeconfig for a user authenticated by a client certificate
// that the run's authority signs.
func (c *Cluster) writeKubeconfig(name, user string, groups ...string) (string, error) {
	pair, err := c.Authority.Client(user, groups...)
	if err != nil {
		return "", err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["restage-gate"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.Authority.CertPEM}
	config.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: pair.CertPEM, ClientKeyData: pair.KeyPEM}
	config.Contexts["restage-gate"] = &clientcmdapi.Context{Cluster: "restage-gate", AuthInfo: name}
	config.CurrentContext = "restage-gate"
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*config, path)
}

func (c *Cluster) httpClient(name string) (*http.Client, error) {
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.Dir, name+".kubeconfig"))
	if err != nil {
		return nil, err
	}
	return rest.HTTPClientFor(config)
}

func httpGet(client *http.Client, url string) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// waitFor polls check until it succeeds, the process exits, or the context ends.
func waitFor(ctx context.Context, p *process, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%s stopped before it was ready: %v", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TLSConfigFor is a client TLS configuration that trusts the run's authority.
func (c *Cluster) TLSConfigFor() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(c.Authority.Cert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
