// An app of the scenarios: one workload of a kind, created from the kind's fixture in a
// namespace of its own, running three pods; the services bound to it; and every pod the
// namespace has ever had, so a scenario can count restarts and rollouts.
package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// HeldLabel is restage-gate's marker on a held workload.
const heldLabel = "restage-gate.io/held"

var serviceBindings = schema.GroupVersionResource{Group: "servicebinding.io", Version: "v1", Resource: "servicebindings"}

// app is one workload under test.
type app struct {
	t         testing.TB
	kind      kind
	namespace string
	name      string
	selector  string

	mu   sync.Mutex
	seen map[types.UID]corev1.Pod // every pod of the namespace, as first seen
	stop context.CancelFunc
	// baseline is the pods the app ran with before the scenario began; userMade counts pods
	// made by the scenario's own deletes and scale-ups since.
	baseline map[types.UID]bool
	userMade int
}

// newApp creates the kind's workload with three pods in a new namespace and waits until they
// run.
func newApp(t *testing.T, k kind) *app {
	t.Helper()
	a := createApp(t, k)
	a.waitRolledOut("the first rollout")
	a.baseline = a.snapshotSeen()
	return a
}

// newApps is newApp for each kind, the first rollouts waited for together.
func newApps(t *testing.T, ks ...kind) []*app {
	t.Helper()
	var apps []*app
	for _, k := range ks {
		apps = append(apps, createApp(t, k))
	}
	each(t, apps, func(a *app) {
		a.waitRolledOut("the first rollout")
		a.baseline = a.snapshotSeen()
	})
	return apps
}

// createApp creates the kind's workload in a new namespace.
func createApp(t *testing.T, k kind) *app {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rg-" + strings.ToLower(k.Kind) + "-"}}
	created, err := env.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := &app{t: t, kind: k, namespace: created.Name, seen: map[types.UID]corev1.Pod{}}
	t.Cleanup(func() {
		a.stop()
		if !t.Failed() {
			_ = env.client.CoreV1().Namespaces().Delete(context.Background(), a.namespace, metav1.DeleteOptions{})
		} else {
			t.Logf("namespace %s kept for inspection", a.namespace)
		}
	})
	a.watchPods()
	workload := k.fixture(t)
	workload.SetNamespace(a.namespace)
	a.name = workload.GetName()
	labels, _, _ := unstructured.NestedStringMap(workload.Object, "spec", "selector", "matchLabels")
	var parts []string
	for key, value := range labels {
		parts = append(parts, key+"="+value)
	}
	sort.Strings(parts)
	a.selector = strings.Join(parts, ",")
	// The fixture's pods run as its own service account, which the namespace needs first.
	if sa, _, _ := unstructured.NestedString(workload.Object, "spec", "template", "spec", "serviceAccountName"); sa != "" && sa != "default" {
		account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: a.namespace}}
		if _, err := env.client.CoreV1().ServiceAccounts(a.namespace).Create(ctx, account, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.dynamic.Resource(k.gvr()).Namespace(a.namespace).Create(ctx, workload, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s/%s: %v", k.Kind, a.namespace, a.name, err)
	}
	return a
}

// each runs step for every app at once, each in a goroutine of its own, and returns when all
// are done: the apps wait on their own controllers, not on one another. A failed step fails
// the test and ends that step; the test ends once every step has returned.
func each(t *testing.T, apps []*app, step func(a *app)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, a := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := a.t
			a.t = stepT{own}
			defer func() { a.t = own }()
			step(a)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// stepT is the test's T in a goroutine of each: testing allows FailNow on the test's own
// goroutine only, so a Fatal here fails the test and ends this goroutine.
type stepT struct{ testing.TB }

func (s stepT) FailNow() {
	s.Fail()
	runtime.Goexit()
}

func (s stepT) Fatal(args ...any) {
	s.Error(args...)
	runtime.Goexit()
}

func (s stepT) Fatalf(format string, args ...any) {
	s.Errorf(format, args...)
	runtime.Goexit()
}

// boundApp is a new app with each service bound, as the projector writes them, and its
// controller caught up with the last write.
func boundApp(t *testing.T, k kind, services ...string) *app {
	t.Helper()
	a := newApp(t, k)
	for _, s := range services {
		a.bind(s)
	}
	a.settled("the binds")
	return a
}

// boundApps is boundApp for each kind, the apps made and bound together.
func boundApps(t *testing.T, ks []kind, services ...string) []*app {
	t.Helper()
	apps := newApps(t, ks...)
	each(t, apps, func(a *app) {
		for _, s := range services {
			a.bind(s)
		}
		a.settled("the binds")
	})
	return apps
}

// runningWith is a new app with `service` bound and rolled out to every pod, as the scenario's
// starting point.
func runningWith(t *testing.T, k kind, service string) *app {
	t.Helper()
	a := newApp(t, k)
	a.bind(service)
	a.settled("the bind")
	a.mustKubectl("annotate", k.resourceName(a.name), "restage-gate.io/release=now", "--overwrite")
	a.waitRolledOut("the bind's rollout")
	a.quiet()
	a.baseline = a.snapshotSeen()
	a.userMade = 0
	return a
}

// quiet waits until nobody has written the workload for a while. The binding runtime's
// controller answers each change of a workload by writing it again (no change, but admitted
// through every webhook), so a bind during a rollout's status updates meets the projector race
// (docs/testing.md); a scenario that is not about the race starts once that has stopped.
func (a *app) quiet() {
	a.t.Helper()
	last, since := "", time.Now()
	a.waitFor("the workload to be left alone", func() (bool, string) {
		if v := a.object().GetResourceVersion(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) > 3*time.Second, "written at resourceVersion " + last
	})
}

// deletePod deletes the app's first pod by name, as `kubectl delete pod` does, and waits until
// its controller has replaced it.
func (a *app) deletePod() {
	a.t.Helper()
	pods := a.pods()
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	a.mustKubectl("delete", "pod", pods[0].Name)
	a.userMade++
	a.waitFor("the deleted pod's replacement", func() (bool, string) {
		for _, p := range a.pods() {
			if p.UID == pods[0].UID {
				return false, "the deleted pod is still there"
			}
		}
		return a.podsReady()
	})
}

func (a *app) watchPods() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stop = cancel
	w, err := env.client.CoreV1().Pods(a.namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for event := range w.ResultChan() {
			pod, ok := event.Object.(*corev1.Pod)
			if !ok || event.Type != watch.Added {
				continue
			}
			a.mu.Lock()
			if _, known := a.seen[pod.UID]; !known {
				a.seen[pod.UID] = *pod
			}
			a.mu.Unlock()
		}
	}()
}

// podsEver is how many pods the namespace has had.
func (a *app) podsEver() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// object reads the workload.
func (a *app) object() *unstructured.Unstructured {
	a.t.Helper()
	obj, err := env.dynamic.Resource(a.kind.gvr()).Namespace(a.namespace).Get(context.Background(), a.name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return obj
}

// pods lists the workload's pods that are not terminating.
func (a *app) pods() []corev1.Pod {
	a.t.Helper()
	list, err := env.client.CoreV1().Pods(a.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: a.selector})
	if err != nil {
		a.t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// running is the pods' identities: uid and start time, which change when a pod is replaced.
type running map[types.UID]string

func (a *app) running() running {
	r := running{}
	for _, p := range a.pods() {
		started := ""
		if p.Status.StartTime != nil {
			started = p.Status.StartTime.UTC().Format(time.RFC3339Nano)
		}
		r[p.UID] = started
	}
	return r
}

// replaced counts the pods of `before` that are gone or started again.
func (r running) replaced(before running) int {
	n := 0
	for uid, started := range before {
		if now, ok := r[uid]; !ok || now != started {
			n++
		}
	}
	return n
}

// settled waits until the workload's controller has seen its latest generation and every pod
// it wants runs and is ready: whatever the controller was going to do with the last write, it
// has begun.
func (a *app) settled(what string) {
	a.t.Helper()
	a.waitFor(what, func() (bool, string) {
		obj := a.object()
		observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		if observed < obj.GetGeneration() {
			return false, fmt.Sprintf("observedGeneration %d < generation %d", observed, obj.GetGeneration())
		}
		return a.podsReady()
	})
	// The controller acts on the generation it has observed within the same sync; one more
	// sync period of the node agent lets a pod it deleted show as terminating.
	time.Sleep(2 * time.Second)
}

// waitRolledOut waits until every pod runs the workload's current template.
func (a *app) waitRolledOut(what string) {
	a.t.Helper()
	a.waitFor(what, func() (bool, string) {
		if ok, why := a.kind.rolledOut(a.object()); !ok {
			return false, why
		}
		return a.podsReady()
	})
}

func (a *app) podsReady() (bool, string) {
	pods := a.pods()
	if len(pods) != a.kind.Pods {
		return false, fmt.Sprintf("%d pods, want %d", len(pods), a.kind.Pods)
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase)
		}
	}
	return true, ""
}

func (a *app) waitFor(what string, done func() (bool, string)) {
	a.t.Helper()
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		var ok bool
		ok, why = done()
		return ok, nil
	})
	if err != nil {
		a.t.Fatalf("%s %s/%s: %s never happened: %s", a.kind.Kind, a.namespace, a.name, what, why)
	}
}

// bind creates a Secret and a ServiceBinding of it to the workload, as `cf bind-service` does
// on Korifi, and waits until the projector has written the binding into the workload.
func (a *app) bind(service string) {
	a.t.Helper()
	a.createBinding(service)
	a.waitProjected(service)
}

// createBinding creates the Secret and the ServiceBinding named `service`, whose binding
// directory is `service` too.
func (a *app) createBinding(service string) {
	a.t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: a.namespace},
		Type:       corev1.SecretType("servicebinding.io/user-provided"),
		StringData: map[string]string{"type": "user-provided", "uri": "postgres://" + service},
	}
	if _, err := env.client.CoreV1().Secrets(a.namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		a.t.Fatal(err)
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "servicebinding.io/v1",
		"kind":       "ServiceBinding",
		"metadata":   map[string]any{"name": service, "namespace": a.namespace},
		"spec": map[string]any{
			"name":     service,
			"type":     "user-provided",
			"service":  map[string]any{"apiVersion": "v1", "kind": "Secret", "name": service},
			"workload": map[string]any{"apiVersion": a.kind.apiVersion(), "kind": a.kind.Kind, "name": a.name},
		},
	}}
	if _, err := env.dynamic.Resource(serviceBindings).Namespace(a.namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		a.t.Fatal(err)
	}
}

// waitProjected waits until the binding's projection is in the workload's pod template.
func (a *app) waitProjected(service string) {
	a.t.Helper()
	ctx := context.Background()
	created, err := env.dynamic.Resource(serviceBindings).Namespace(a.namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	key := "projector.servicebinding.io/secret-" + string(created.GetUID())
	a.waitFor("the projection of "+service, func() (bool, string) {
		annotations, _, _ := unstructured.NestedStringMap(a.object().Object, "spec", "template", "metadata", "annotations")
		return annotations[key] == service, "no " + key + " on the pod template"
	})
}

// unbind deletes the ServiceBinding and waits until the projector has taken it out of the
// workload and released the binding.
func (a *app) unbind(service string) {
	a.t.Helper()
	ctx := context.Background()
	if err := env.dynamic.Resource(serviceBindings).Namespace(a.namespace).Delete(ctx, service, metav1.DeleteOptions{}); err != nil {
		a.t.Fatal(err)
	}
	a.waitFor("the removal of "+service, func() (bool, string) {
		_, err := env.dynamic.Resource(serviceBindings).Namespace(a.namespace).Get(ctx, service, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "the ServiceBinding still exists"
	})
}

// podsSee is what each live pod has bound, as "cache,orders-db" per pod, sorted.
func (a *app) podsSee() []string {
	var seen []string
	for _, p := range a.pods() {
		seen = append(seen, strings.Join(mountedBindings(p), ","))
	}
	sort.Strings(seen)
	return seen
}

// held says whether restage-gate's markers are on the workload, and the kind's control holds.
func (a *app) held() bool {
	obj := a.object()
	return obj.GetLabels()[heldLabel] == "true" && a.kind.holds(obj)
}

// kubectl runs kubectl of the pinned release, as a user in a shell would, in the app's
// namespace; it returns what it printed and whether it succeeded.
func (a *app) kubectl(args ...string) (string, error) {
	return kubectl(append([]string{"-n", a.namespace}, args...)...)
}

// kubectl runs kubectl with the admin's kubeconfig.
func kubectl(args ...string) (string, error) {
	return kubectlAs(env.cluster.Kubeconfig, args...)
}

func kubectlAs(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Dir = env.repo
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlSplit runs kubectl in the app's namespace and returns what it printed on stdout and
// on stderr (where it prints the API server's warnings) apart.
func (a *app) kubectlSplit(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(env.kubectl, append([]string{"-n", a.namespace}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cluster.Kubeconfig)
	cmd.Dir = env.repo
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl fails the test when kubectl does.
func (a *app) mustKubectl(args ...string) string {
	a.t.Helper()
	out, err := a.kubectl(args...)
	if err != nil {
		a.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// readJSON reads a file of the repository.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(env.repo, path))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// writeManifest writes an object as a file kubectl can apply.
func writeManifest(t testing.TB, obj *unstructured.Unstructured) string {
	t.Helper()
	text, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): a subtest's name may hold a comma, where kubectl -f splits file names.
	dir, err := os.MkdirTemp("", "manifest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, obj.GetName()+".json")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func toString(v any) string {
	text, _ := json.Marshal(v)
	return string(text)
}
