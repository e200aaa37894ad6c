// The window job as the chart renders it with maintenance windows set, on the real API server:
// its command, as its CronJob runs it, sent with a token of its own ServiceAccount under the
// chart's RBAC and ValidatingAdmissionPolicy; the permission bound only after the admission
// policy (docs/install.md); outside a maintenance window it stores nothing, inside one it
// releases every held workload once, and inside one that spreads its releases each at the
// first tick from its own slot; and the writes its token must not make, or a same-named
// account of another namespace, are refused.
package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const (
	jobNamespace      = chartNamespace
	jobServiceAccount = "restage-gate-window-release"
)

// alwaysOpen is a maintenance window that is open whenever the test runs.
var alwaysOpen = []any{map[string]any{"days": []any{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "start": "00:00", "end": "00:00"}}

// closedWindow is a maintenance window that is not open while the test runs: the whole day
// two days from now.
func closedWindow() []any {
	day := time.Now().UTC().Add(48 * time.Hour).Weekday().String()[:3]
	return []any{map[string]any{"days": []any{day}, "start": "00:00", "end": "00:00"}}
}

// withWindows are the chart's values with these maintenance windows.
func withWindows(windows []any) map[string]any {
	return map[string]any{"settings": map[string]any{"maintenanceWindows": windows}}
}

// tokenConfig writes a kubeconfig holding a token of a ServiceAccount.
func tokenConfig(t *testing.T, namespace, account string) string {
	t.Helper()
	token, err := kubectl("create", "token", account, "-n", namespace)
	if err != nil {
		t.Fatalf("kubectl create token: %v\n%s", err, token)
	}
	config := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "job",
		"clusters": []any{map[string]any{"name": "c", "cluster": map[string]any{
			"server": env.cluster.Server, "certificate-authority": filepath.Join(env.cluster.Dir, "pki", "ca.crt")}}},
		"users":    []any{map[string]any{"name": "job", "user": map[string]any{"token": strings.TrimSpace(token)}}},
		"contexts": []any{map[string]any{"name": "job", "context": map[string]any{"cluster": "c", "user": "job"}}},
	}
	text, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), namespace+".kubeconfig")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// installJob installs what the chart renders with these windows, as docs/install.md says in
// two steps: everything but the job's permission (the policies, the job and its admission
// policy), under which the job's token may write nothing, then the permission. It returns a
// kubeconfig holding a token of the job's ServiceAccount and the job's kubectl arguments.
func installJob(t *testing.T, windows []any) (string, []string) {
	t.Helper()
	kubewardenNamespace(t)
	unbind := func() {
		if out, err := kubectl("delete", "clusterrolebinding", jobServiceAccount, "--ignore-not-found"); err != nil {
			t.Fatalf("removing the job's permission: %v\n%s", err, out)
		}
	}
	unbind()
	t.Cleanup(unbind)
	rendered := renderChart(t, withWindows(windows))
	for _, obj := range renderedKinds(t, rendered) {
		if strings.HasPrefix(obj, "ClusterRoleBinding/") || strings.HasPrefix(obj, "RoleBinding/") {
			t.Fatalf("the chart binds %s before its admission policy is in the cluster", obj)
		}
	}
	install(t, rendered)
	job := tokenConfig(t, jobNamespace, jobServiceAccount)
	args := jobCommand(t, rendered)
	if out, err := kubectlAs(job, args...); err == nil || !strings.Contains(out, "forbidden") {
		t.Fatalf("the job's token wrote before its permission was bound: %v\n%s", err, out)
	}
	values := withWindows(windows)
	values["windowRelease"] = map[string]any{"admissionPolicyApplied": true}
	binding := renderChart(t, values, "window-release-binding.yaml")
	if got := renderedKinds(t, binding); len(got) != 1 || got[0] != "ClusterRoleBinding/"+jobServiceAccount {
		t.Fatalf("the chart's permission step renders %v", got)
	}
	if out, err := kubectl("apply", "-f", binding); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", binding, err, out)
	}
	return job, args
}

// jobCommand is the kubectl arguments of the container of the rendered CronJob that annotates
// the kinds of the built-in groups.
func jobCommand(t *testing.T, rendered string) []string {
	t.Helper()
	text, err := os.ReadFile(rendered)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(text), "\n---") {
		var cron struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				JobTemplate struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct {
									Command []string `json:"command"`
									Args    []string `json:"args"`
								} `json:"containers"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				} `json:"jobTemplate"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cron); err != nil {
			t.Fatal(err)
		}
		if cron.Kind == "CronJob" && cron.Metadata.Name == jobServiceAccount {
			c := cron.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
			if len(c.Command) != 1 || filepath.Base(c.Command[0]) != "kubectl" {
				t.Fatalf("the job runs %v, not kubectl", c.Command)
			}
			return c.Args
		}
	}
	t.Fatalf("the chart rendered no CronJob %s", jobServiceAccount)
	return nil
}

// slot is a workload's minute in a window spreading its releases over `spread` minutes, as
// docs/design.md §8 defines it: FNV-1a (64 bits) of its uid, modulo the spread.
func slot(uid string, spread uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return h.Sum64() % spread
}

// openedAgo is a maintenance window that opened `minutes` whole minutes before this minute
// and lasts a whole day, spreading its releases over its first `spread` minutes; and its start.
// The policy reads the real clock, so a window opened earlier stands for a clock that has
// moved on.
func openedAgo(minutes int, spread uint64) ([]any, time.Time) {
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(minutes) * time.Minute)
	at := start.Format("15:04")
	window := map[string]any{"days": []any{start.Format("Mon")}, "start": at, "end": at, "spreadMinutes": spread}
	return []any{window}, start
}

// heldApps makes one held app of each kind.
func heldApps(t *testing.T) []*app {
	t.Helper()
	apps := boundApps(t, kinds, "orders-db")
	for _, a := range apps {
		if !a.held() {
			t.Fatalf("%s not held after the bind: %s", a.kind.Kind, describe(a))
		}
	}
	return apps
}

func TestWindowJob(t *testing.T) {
	t.Run("outside every maintenance window the job's ticks change no field", func(t *testing.T) {
		job, args := installJob(t, closedWindow())
		apps := heldApps(t)
		stored := map[*app]string{}
		for _, a := range apps {
			stored[a] = a.storedState()
		}
		for tick := 0; tick < 2; tick++ {
			if out, err := kubectlAs(job, args...); err != nil {
				t.Fatalf("the job's tick failed: %v\n%s", err, out)
			}
		}
		for _, a := range apps {
			a.settled("the ticks")
			if got := a.storedState(); got != stored[a] {
				t.Errorf("%s: the job's ticks stored a change outside every window:\nbefore %s\nafter  %s", a.kind.Kind, stored[a], got)
			}
			if !a.held() {
				t.Errorf("%s released outside every window: %s", a.kind.Kind, describe(a))
			}
		}
	})

	t.Run("inside a maintenance window the job's first tick releases every held workload once, the second changes no field", func(t *testing.T) {
		// Held first, outside every window, then the chart is rendered with one open.
		job, args := installJob(t, closedWindow())
		apps := heldApps(t)
		install(t, renderChart(t, withWindows(alwaysOpen)))
		if out, err := kubectlAs(job, args...); err != nil {
			t.Fatalf("the job's tick failed: %v\n%s", err, out)
		}
		for _, a := range apps {
			a.waitRolledOut("the window's release")
			if ever := a.podsEver(); ever != 2*a.kind.Pods {
				t.Errorf("%s: %d pods were ever created, want %d: one rollout", a.kind.Kind, ever, 2*a.kind.Pods)
			}
			for _, sees := range a.podsSee() {
				if sees != "orders-db" {
					t.Errorf("%s: after the release the pods see %v", a.kind.Kind, a.podsSee())
				}
			}
			if a.held() || a.object().GetLabels()[heldLabel] != "" {
				t.Errorf("%s still held: %s", a.kind.Kind, describe(a))
			}
		}
		stored := map[*app]string{}
		for _, a := range apps {
			stored[a] = a.storedState()
		}
		if out, err := kubectlAs(job, args...); err != nil {
			t.Fatalf("the job's second tick failed: %v\n%s", err, out)
		}
		for _, a := range apps {
			if got := a.storedState(); got != stored[a] {
				t.Errorf("%s: the second tick stored a change:\nbefore %s\nafter  %s", a.kind.Kind, stored[a], got)
			}
		}
	})

	t.Run("inside a window that spreads its releases the job releases two held workloads at different ticks, each from its own slot", func(t *testing.T) {
		const spread = 24 * 60
		job, args := installJob(t, closedWindow())
		// Two held workloads whose slots leave a tick before the first, and a minute to spare
		// between them: the clock may pass a minute between a tick's window and its write.
		var first, second *app
		var firstSlot, secondSlot uint64
		var made []string
		for i := 0; second == nil; i++ {
			if i == 6 {
				t.Fatalf("no two of the workloads' slots are far enough apart: %v", made)
			}
			a := boundApp(t, kinds[i%len(kinds)], "orders-db")
			if !a.held() {
				t.Fatalf("%s not held after the bind: %s", a.kind.Kind, describe(a))
			}
			s := slot(string(a.object().GetUID()), spread)
			made = append(made, fmt.Sprintf("%s slot %d", a.kind.Kind, s))
			switch {
			case s < 2:
			case first == nil:
				first, firstSlot = a, s
			case s >= firstSlot+3:
				second, secondSlot = a, s
			case firstSlot >= s+3:
				first, firstSlot, second, secondSlot = a, s, first, firstSlot
			}
		}
		tick := func(minutesAgo int) (string, time.Time) {
			windows, start := openedAgo(minutesAgo, spread)
			install(t, renderChart(t, withWindows(windows)))
			out, err := kubectlAs(job, args...)
			if err != nil {
				t.Fatalf("the job's tick failed: %v\n%s", err, out)
			}
			return out, start
		}
		slotAt := func(start time.Time, s uint64) string {
			return start.Add(time.Duration(s) * time.Minute).Format(time.RFC3339)
		}

		// Before either slot: both stay held, nothing is stored, and each warning says when.
		stored := map[*app]string{first: first.storedState(), second: second.storedState()}
		out, start := tick(int(firstSlot) - 2)
		for a, s := range map[*app]uint64{first: firstSlot, second: secondSlot} {
			a.settled("the tick")
			if !a.held() || a.storedState() != stored[a] {
				t.Errorf("%s (slot %d) changed before its slot: %s", a.kind.Kind, s, describe(a))
			}
			if want := "stays held until its maintenance-window slot at " + slotAt(start, s); !strings.Contains(out, want) {
				t.Errorf("the job's tick did not warn %q:\n%s", want, out)
			}
		}

		// The first slot has come, not the second.
		tick(int(firstSlot))
		first.waitRolledOut("the release at its slot")
		second.settled("the tick")
		if first.held() {
			t.Errorf("%s (slot %d) still held at its slot: %s", first.kind.Kind, firstSlot, describe(first))
		}
		if !second.held() || second.storedState() != stored[second] {
			t.Errorf("%s (slot %d) released at the tick of slot %d: %s", second.kind.Kind, secondSlot, firstSlot, describe(second))
		}

		// The second slot has come.
		tick(int(secondSlot))
		second.waitRolledOut("the release at its slot")
		if second.held() {
			t.Errorf("%s (slot %d) still held at its slot: %s", second.kind.Kind, secondSlot, describe(second))
		}
		for _, a := range []*app{first, second} {
			if ever := a.podsEver(); ever != 2*a.kind.Pods {
				t.Errorf("%s: %d pods were ever created, want %d: one rollout", a.kind.Kind, ever, 2*a.kind.Pods)
			}
			for _, sees := range a.podsSee() {
				if sees != "orders-db" {
					t.Errorf("%s: after the release the pods see %v", a.kind.Kind, a.podsSee())
				}
			}
		}
	})

	t.Run("the job's token cannot change anything else, inside a window or out", func(t *testing.T) {
		job, _ := installJob(t, closedWindow())
		jobConfig, err := clientcmd.BuildConfigFromFlags("", job)
		if err != nil {
			t.Fatal(err)
		}
		jobClient := dynamic.NewForConfigOrDie(jobConfig)
		apps := heldApps(t)
		release := `"metadata":{"annotations":{"restage-gate.io/release":"window"}}`
		attacks := map[string]map[string]string{
			"StatefulSet": {
				"a release with maxUnavailable 100%": `{` + release + `,"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0,"maxUnavailable":"100%"}}}}`,
				"a release with another partition":   `{` + release + `,"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}`,
			},
			"DaemonSet": {
				"a release with maxUnavailable 100%": `{` + release + `,"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"100%","maxSurge":0}}}}`,
			},
			"Deployment": {
				"a release that scales": `{` + release + `,"spec":{"paused":false,"replicas":10}}`,
			},
		}
		// A StatefulSet whose owner set partition 2 before the bind: restage-gate remembers that
		// strategy, and a release that restores another partition is refused.
		for _, k := range kinds {
			if k.Kind != "StatefulSet" {
				continue
			}
			a := newApp(t, k)
			a.mustKubectl("patch", k.resourceName(a.name), "--type", "merge", "-p", `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}`)
			a.bind("orders-db")
			a.settled("the bind")
			if !a.held() {
				t.Fatalf("the partitioned StatefulSet is not held: %s", describe(a))
			}
			if remembered := a.object().GetAnnotations()["restage-gate.io/original-update-strategy"]; !strings.Contains(remembered, `"partition":2`) {
				t.Fatalf("restage-gate remembers %s, not the owner's partition 2", remembered)
			}
			apps = append(apps, a)
		}
		partitioned := apps[len(apps)-1]
		common := map[string]string{
			"a change of replicas":  `{"spec":{"replicas":7}}`,
			"another label":         `{"metadata":{"labels":{"team":"attacker"}}}`,
			"a release and a label": `{` + release + `,"metadata":{"labels":{"team":"attacker"}}}`,
		}
		for _, windowOpen := range []bool{false, true} {
			if windowOpen {
				install(t, renderChart(t, withWindows(alwaysOpen)))
			}
			for _, a := range apps {
				writes := map[string]string{}
				for name, patch := range common {
					if name == "a change of replicas" && a.kind.Kind == "DaemonSet" {
						continue
					}
					writes[name] = patch
				}
				for name, patch := range attacks[a.kind.Kind] {
					writes[name] = patch
				}
				if a == partitioned {
					// partition 2 is what it remembers
					delete(writes, "a release with another partition")
					writes["a release with partition 0 where partition 2 is remembered"] = `{` + release + `,"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}}`
				}
				for name, patch := range writes {
					before := a.storedState()
					// Sent as one PATCH, as a stolen token would: kubectl patch reads the object
					// first, which the job's role does not allow, and would be refused by RBAC
					// before the admission policy is asked.
					_, err := jobClient.Resource(a.kind.gvr()).Namespace(a.namespace).Patch(context.Background(), a.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
					if err == nil {
						t.Errorf("%s (window open: %v): the job's token made %s", a.kind.Kind, windowOpen, name)
						continue
					}
					if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'restage-gate-window-release'") {
						t.Errorf("%s (window open: %v): %s was refused, but not by the job's admission policy: %v", a.kind.Kind, windowOpen, name, err)
					}
					if got := a.storedState(); got != before {
						t.Errorf("%s: %s stored a change", a.kind.Kind, name)
					}
				}
			}
		}
		// Its token writes nothing outside the kinds it releases.
		if out, err := kubectlAs(job, "-n", apps[0].namespace, "create", "configmap", "x", "--from-literal=a=b"); err == nil {
			t.Errorf("the job's token created a config map:\n%s", out)
		}
	})

	t.Run("a ServiceAccount of the job's name in another namespace, bound to its role, writes nothing", func(t *testing.T) {
		_, args := installJob(t, closedWindow())
		apps := heldApps(t)
		install(t, renderChart(t, withWindows(alwaysOpen)))
		const elsewhere = "restage-gate-elsewhere"
		t.Cleanup(func() {
			_, _ = kubectl("delete", "clusterrolebinding", elsewhere, "--ignore-not-found")
			_, _ = kubectl("delete", "namespace", elsewhere, "--ignore-not-found", "--wait=false")
		})
		for _, c := range [][]string{
			{"create", "namespace", elsewhere},
			{"create", "serviceaccount", jobServiceAccount, "-n", elsewhere},
			{"create", "clusterrolebinding", elsewhere, "--clusterrole=" + jobServiceAccount, "--serviceaccount=" + elsewhere + ":" + jobServiceAccount},
		} {
			if out, err := kubectl(c...); err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(c, " "), err, out)
			}
		}
		other := tokenConfig(t, elsewhere, jobServiceAccount)
		stored := map[*app]string{}
		for _, a := range apps {
			stored[a] = a.storedState()
		}
		// The job's own command, inside a window: from the job's namespace it releases.
		out, err := kubectlAs(other, args...)
		if err == nil {
			t.Fatalf("the job's command ran as %s/%s:\n%s", elsewhere, jobServiceAccount, out)
		}
		for _, want := range []string{"ValidatingAdmissionPolicy 'restage-gate-window-release'", "writes from the namespace " + jobNamespace + " only"} {
			if !strings.Contains(out, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, out)
			}
		}
		for _, a := range apps {
			if got := a.storedState(); got != stored[a] || !a.held() {
				t.Errorf("%s: changed by another namespace's account:\nbefore %s\nafter  %s", a.kind.Kind, stored[a], got)
			}
		}
	})
}

// storedState is the workload as its controllers and users read it: everything but its status,
// its resourceVersion and its managedFields. The job's first write outside a window is stored as
// a managedFields entry alone (the API server records kubectl-annotate as the manager of the
// annotation restage-gate then removed): no field a controller reads changes, and the
// generation stays.
func (a *app) storedState() string {
	obj := a.object()
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	return toString(obj.Object)
}
