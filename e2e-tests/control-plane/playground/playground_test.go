// The playground as the README offers it: `make cluster-up` starts the control plane with
// restage-gate installed and prints KUBECONFIG=… last; kubectl with that file reaches it; `make
// cluster-down` stops every process it started.
package playground

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestClusterUpPrintsAKubeconfigThatReachesRestageGateAndClusterDownStopsEverything(t *testing.T) {
	for _, name := range []string{"CONTROL_PLANE", "RESTAGE_GATE_WEBHOOK"} {
		if os.Getenv(name) == "" {
			t.Fatalf("%s is not set: run these tests with `make test-control-plane`", name)
		}
	}
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clusterDir := "CLUSTER_DIR=" + dir
	make := func(target string) string {
		t.Helper()
		cmd := exec.Command("make", "--no-print-directory", "-C", repo, target, clusterDir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _, _ = exec.Command("make", "-C", repo, "cluster-down", clusterDir).CombinedOutput() })
	up := make("cluster-up")
	lines := strings.Split(strings.TrimSpace(up), "\n")
	last := lines[len(lines)-1]
	kubeconfig, found := strings.CutPrefix(last, "KUBECONFIG=")
	if !found {
		t.Fatalf("make cluster-up's last line is %q, not KUBECONFIG=…", last)
	}
	pid := readPid(t, filepath.Join(dir, "up.pid"))

	kubectl := exec.Command(filepath.Join(dir, "bin", "kubectl"), "get", "clusteradmissionpolicy", "restage-gate",
		"-o", "jsonpath={.status.policyStatus}")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	status, err := kubectl.CombinedOutput()
	if err != nil || string(status) != "active" {
		t.Fatalf("kubectl get clusteradmissionpolicy restage-gate with the printed KUBECONFIG: %v %s", err, status)
	}

	started := descendantsOf(t, pid)
	if len(started) == 0 {
		t.Fatal("the control plane runs no component")
	}
	make("cluster-down")
	for _, p := range append(started, pid) {
		if syscall.Kill(p, 0) == nil {
			t.Errorf("process %d still runs after make cluster-down", p)
		}
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// descendantsOf lists every process started under pid (the components, and the policy server
// a component starts), from /proc.
func descendantsOf(t *testing.T, pid int) []int {
	t.Helper()
	var all []int
	for next := []int{pid}; len(next) > 0; {
		var found []int
		for _, p := range next {
			found = append(found, childrenOf(t, p)...)
		}
		all = append(all, found...)
		next = found
	}
	return all
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children = append(children, p)
		}
	}
	return children
}
