// The commands a user copies from README.md and docs/*.md that talk to a cluster, run as the
// docs write them with this control plane's kubectl, and what each does to real objects: the
// setups of the README's Install, its Operations, docs/install.md's namespace label, upgrade
// and window job, and the whole of docs/uninstall.md.
//
// The commands are read from the docs when the tests run, by the rules of the simulation's
// suite (e2e-tests/src/docs.rs): every command of the ```console, ```sh, ```bash and ```shell
// blocks, one a line unless continued (a trailing `\`, `|`, `&&` or `||`, an open quote), `#`
// comments left out. A step selects the command it runs by an entry of docsRun, written as the
// suite's lists write them (the whole command, or its start followed by " …"), and fails when
// the doc no longer has it. Each runs in bash at the top of the repository with this control
// plane's kubectl first on the PATH and its kubeconfig; NAME and NAMESPACE stand for a real
// app's. docsNotRun lists the cluster commands that cannot run here, with why, and
// TestEveryClusterCommandOfTheDocsRunsHereOrIsListed fails on a kubectl command of the docs
// that neither list names.
package scenarios

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// A documented command and the test that runs it, or why it is not run here.
type docEntry struct {
	file string
	// command is the command as the doc writes it, or its start followed by " …".
	command string
	// by is the test that runs it (docsRun), or the reason it is not run (docsNotRun).
	by string
}

// Entries used more than once: commands long enough to select by their start, or written in two
// docs.
const (
	readmeFindHeld = `if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o custom-columns= …`
	waitDefer      = `kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate --timeout …`
	waitGuard      = `kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate clusteradmissionpolicy/restage-gate-guard …`
	waitMonitor    = `kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate-monitor …`
	listHeld       = `if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true; fi …`
	applyNow       = `kubectl annotate statefulset/NAME …`
	applyWindowJob = "kubectl apply -f window-release.yaml"
	applyBinding   = "kubectl apply -f window-release-binding.yaml"
	helmInstall    = "helm install restage-gate charts/restage-gate -n kubewarden"
	helmWindows    = "helm upgrade restage-gate charts/restage-gate -n kubewarden --reuse-values --set-json …"
	helmBind       = "helm upgrade restage-gate charts/restage-gate -n kubewarden --reuse-values"
	helmRender     = "helm template restage-gate charts/restage-gate -f values.yaml …"
)

// docsRunHere are the documented commands these tests run, each with its test; every kind's own
// apply-now command is added from the kinds (docsRun).
var docsRunHere = []docEntry{
	{"README.md", "kubectl apply -f policy.yaml", "TestDocsDeferSetup"},
	{"README.md", waitDefer, "TestDocsDeferSetup"},
	{"README.md", "kubectl apply -f monitor.yaml", "TestDocsGuardAndMonitorSetups"},
	{"README.md", waitMonitor, "TestDocsGuardAndMonitorSetups"},
	{"README.md", "kubectl delete clusteradmissionpolicy restage-gate-monitor", "TestDocsGuardAndMonitorSetups"},
	{"README.md", "kubectl apply -f policy.yaml -f guard.yaml", "TestDocsGuardAndMonitorSetups"},
	{"README.md", waitGuard, "TestDocsGuardAndMonitorSetups"},
	{"README.md", readmeFindHeld, "TestDocsOperations"},
	{"README.md", applyNow, "TestDocsOperations"},
	{"docs/install.md", "kubectl label namespace NAMESPACE …", "TestDocsInstall"},
	{"docs/install.md", listHeld, "TestDocsInstall"},
	{"docs/install.md", "kubectl apply -f policy.yaml -f guard.yaml", "TestDocsInstall"},
	{"docs/install.md", waitGuard, "TestDocsInstall"},
	{"docs/install.md", applyWindowJob, "TestDocsInstall"},
	{"docs/install.md", applyBinding, "TestDocsInstall"},
	// The job the uninstall's first step removes.
	{"docs/install.md", applyWindowJob, "TestDocsUninstall"},
	{"docs/install.md", applyBinding, "TestDocsUninstall"},
	{"docs/uninstall.md", "kubectl delete -f window-release-binding.yaml …", "TestDocsUninstall"},
	{"README.md", helmInstall, "TestDocsChart"},
	{"README.md", waitGuard, "TestDocsChart"},
	{"docs/install.md", "kubectl get clusteradmissionpolicies", "TestDocsChart"},
	{"docs/install.md", helmWindows, "TestDocsChart"},
	{"docs/install.md", helmBind, "TestDocsChart"},
	{"docs/install.md", helmRender, "TestDocsChart"},
	{"docs/uninstall.md", `if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl annotate …`, "TestDocsUninstall"},
	{"docs/uninstall.md", "kubectl delete clusteradmissionpolicy restage-gate-guard", "TestDocsUninstall"},
	{"docs/uninstall.md", "kubectl delete clusteradmissionpolicy restage-gate", "TestDocsUninstall"},
	{"docs/uninstall.md", "restore=' …", "TestDocsUninstall"},
	{"docs/uninstall.md", `if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o json …`, "TestDocsUninstall"},
	{"docs/uninstall.md", listHeld, "TestDocsUninstall"},
	{"README.md", rolloutApplyNow, "TestRolloutBindIsHeldOnTheRealAPIServer"},
}

// docsNotRun: not run here: why. Commands without kubectl (make, kwctl, docker, curl, cosign)
// talk to no cluster; e2e-tests/tests/operator_docs.rs runs or lists them.
var docsNotRun = []docEntry{
	{"docs/install.md", "kubectl logs -n kubewarden deployment/policy-server-default",
		"this control plane runs Kubewarden's stand-in, which serves the module without a policy-server Deployment"},
	{"docs/install.md", "kubectl create configmap restage-gate-verification …",
		"configures the signature check of Kubewarden's PolicyServer, which this control plane does not run (its policy server serves a local module, never pulled or verified), from the operator's own verification-config.yml"},
}

// docsRun is docsRunHere with each kind's own apply-now command of the README's Operations.
func docsRun() []docEntry {
	entries := append([]docEntry{}, docsRunHere...)
	for _, k := range kinds {
		entries = append(entries, docEntry{"README.md", ownApplyNow(k), "TestDocsOperations"})
	}
	return entries
}

// ownApplyNow selects the kind's own apply-now command: its restart, for any workload.
func ownApplyNow(k kind) string {
	return "kubectl " + strings.Join(k.restart("NAME"), " ") + " …"
}

// docFiles are the docs a user copies commands from.
func docFiles(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(env.repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, m := range matches {
		files = append(files, "docs/"+filepath.Base(m))
	}
	sort.Strings(files[1:])
	return files
}

// docBlocks are the bodies of a doc's fenced blocks in these languages, without the indentation
// of their fence (a block inside a list item).
func docBlocks(t *testing.T, file string, languages ...string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(env.repo, file))
	if err != nil {
		t.Fatal(err)
	}
	return fencedBlocks(string(text), languages)
}

func fencedBlocks(markdown string, languages []string) []string {
	var blocks []string
	open := false
	fence := 0
	var body strings.Builder
	for _, line := range strings.Split(markdown, "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimLeft(line, " \t")
		if !open {
			if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
				for _, l := range languages {
					if strings.TrimSpace(lang) == l {
						open, fence = true, len(line)-len(trimmed)
						body.Reset()
					}
				}
			}
			continue
		}
		if strings.TrimRight(trimmed, " \t") == "```" {
			blocks = append(blocks, body.String())
			open = false
			continue
		}
		cut := 0
		for cut < fence && cut < len(line) && line[cut] == ' ' {
			cut++
		}
		body.WriteString(line[cut:])
		body.WriteString("\n")
	}
	return blocks
}

// shellLanguages are the blocks that hold commands.
var shellLanguages = []string{"console", "sh", "bash", "shell"}

// docCommands are the commands of a doc's shell blocks, in order.
func docCommands(t *testing.T, file string) []string {
	t.Helper()
	var commands []string
	for _, block := range docBlocks(t, file, shellLanguages...) {
		commands = append(commands, splitCommands(block)...)
	}
	return commands
}

// splitCommands reads a block as bash does: a newline ends a command unless it is inside quotes
// or the line ends with `\`, `|`, `&&` or `||`; a `#` that starts a word outside quotes starts a
// comment, which is left out.
func splitCommands(block string) []string {
	var commands []string
	var current []rune
	single, double, comment := false, false, false
	chars := []rune(block)
	flush := func() {
		if text := tidy(string(current)); text != "" {
			commands = append(commands, text)
		}
		current = current[:0]
	}
	for i := 0; i < len(chars); i++ {
		c := chars[i]
		if comment {
			if c != '\n' {
				continue
			}
			comment = false
		}
		switch {
		case c == '\\' && !single:
			current = append(current, c)
			if i+1 < len(chars) {
				i++
				current = append(current, chars[i])
			}
			continue
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		case c == '#' && !single && !double && (len(current) == 0 || isSpace(current[len(current)-1])):
			comment = true
			continue
		case c == '\n' && !single && !double:
			line := strings.TrimRight(string(current), " \t\r\n")
			continued := false
			for _, end := range []string{"\\", "|", "&&", "||"} {
				if strings.HasSuffix(line, end) {
					continued = true
				}
			}
			if continued {
				current = append([]rune(line), '\n')
			} else {
				flush()
			}
			continue
		}
		current = append(current, c)
	}
	flush()
	return commands
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// tidy leaves out the blanks that end each line and those around the command.
func tidy(command string) string {
	lines := strings.Split(command, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// docNames says whether an entry names a command: the same text, or for an entry ending in
// " …", a command that starts with the rest.
func docNames(entry, command string) bool {
	if start, ok := strings.CutSuffix(entry, " …"); ok {
		return strings.HasPrefix(command, start)
	}
	return entry == command
}

// A kubectl command: kubectl as a word of it.
var kubectlWord = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])(kubectl|helm)($|[^A-Za-z0-9_-])`)

func TestEveryClusterCommandOfTheDocsRunsHereOrIsListed(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var source []byte
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		source = append(source, text...)
	}
	run, notRun := docsRun(), docsNotRun
	commands := map[string][]string{}
	for _, file := range docFiles(t) {
		commands[file] = docCommands(t, file)
	}
	for _, file := range docFiles(t) {
		for _, c := range commands[file] {
			if !kubectlWord.MatchString(c) {
				continue
			}
			var runs, listed []string
			for _, e := range run {
				if e.file == file && docNames(e.command, c) {
					runs = append(runs, e.by)
				}
			}
			for _, e := range notRun {
				if e.file == file && docNames(e.command, c) {
					listed = append(listed, e.command)
				}
			}
			switch {
			case len(runs) == 0 && len(listed) == 0:
				t.Errorf("%s: `%s` talks to a cluster, and no test here runs it: run it as written (docsRunHere) or say in docsNotRun why it cannot run here", file, c)
			case len(runs) > 0 && len(listed) > 0:
				t.Errorf("%s: `%s` is run by %v and listed as not run", file, c, runs)
			case len(listed) > 1:
				t.Errorf("%s: `%s` is listed as not run %d times", file, c, len(listed))
			}
		}
	}
	for list, entries := range map[string][]docEntry{"docsRun": run, "docsNotRun": notRun} {
		for _, e := range entries {
			n := 0
			for _, c := range commands[e.file] {
				if docNames(e.command, c) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %s: `%s` names %d documented commands; name exactly one as the doc writes it", list, e.file, e.command, n)
			}
			if list == "docsRun" && !strings.Contains(string(source), "func "+e.by+"(t *testing.T)") {
				t.Errorf("docsRun gives %s: `%s` to %s, which no scenario file has", e.file, e.command, e.by)
			}
		}
	}
}

// docSteps hands a test the documented commands docsRun gives it, and checks at its end that it
// ran each of them.
type docSteps struct {
	test string
	mu   sync.Mutex
	used map[docEntry]bool
}

func newDocSteps(t *testing.T) *docSteps {
	d := &docSteps{test: t.Name(), used: map[docEntry]bool{}}
	t.Cleanup(func() {
		// -run naming a subtest runs only some of the steps.
		if t.Failed() || t.Skipped() || strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
			return
		}
		for _, e := range docsRun() {
			if e.by == d.test && !d.used[e] {
				t.Errorf("%s never ran %s: `%s`, which docsRun gives it", d.test, e.file, e.command)
			}
		}
	})
	return d
}

// command is the documented command the entry names, as the doc writes it.
func (d *docSteps) command(t *testing.T, file, entry string) string {
	t.Helper()
	e := docEntry{file, entry, d.test}
	found := false
	for _, r := range docsRun() {
		found = found || r == e
	}
	if !found {
		t.Fatalf("docsRun does not give %s: `%s` to %s", file, entry, d.test)
	}
	var named []string
	for _, c := range docCommands(t, file) {
		if docNames(entry, c) {
			named = append(named, c)
		}
	}
	if len(named) != 1 {
		t.Fatalf("%s has %d commands `%s`, want one", file, len(named), entry)
	}
	d.mu.Lock()
	d.used[e] = true
	d.mu.Unlock()
	return named[0]
}

// run runs the documented command the entry names and returns what it printed; it must succeed.
func (d *docSteps) run(t *testing.T, file, entry string) string {
	t.Helper()
	return mustRunShell(t, d.command(t, file, entry))
}

// runShell runs commands as a user's shell would, at the top of the repository, with this
// control plane's kubectl and kubeconfig; -e and pipefail make a failure anywhere fail the step,
// as the simulation's suite runs them. It returns stdout and stderr together, as a terminal shows
// them.
func runShell(command string) (string, error) {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", command)
	cmd.Dir = env.repo
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(env.kubectl)+string(os.PathListSeparator)+filepath.Dir(os.Getenv("HELM"))+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+env.cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRunShell(t *testing.T, command string) string {
	t.Helper()
	out, err := runShell(command)
	if err != nil {
		t.Fatalf("`%s` failed: %v\n%s", command, err, out)
	}
	return out
}

var (
	namespaceWord = regexp.MustCompile(`\bNAMESPACE\b`)
	nameWord      = regexp.MustCompile(`\bNAME\b`)
	resourceOf    = regexp.MustCompile(`\b[a-z]+/NAME\b`)
)

// forApp is a documented command with NAMESPACE and NAME the app's.
func forApp(command string, a *app) string {
	return nameWord.ReplaceAllLiteralString(namespaceWord.ReplaceAllLiteralString(command, a.namespace), a.name)
}

// forKind is a command written for one kind's workload (`statefulset/NAME`) written for the app's.
func forKind(command string, a *app) string {
	return resourceOf.ReplaceAllLiteralString(command, a.kind.resourceName("NAME"))
}

var admissionPolicies = schema.GroupVersionResource{Group: "policies.kubewarden.io", Version: "v1", Resource: "clusteradmissionpolicies"}

// startWithoutPolicies removes every ClusterAdmissionPolicy, for a test whose documented
// commands install its setup, and puts back, when the test ends, those the cluster had.
func startWithoutPolicies(t *testing.T) {
	t.Helper()
	list, err := env.dynamic.Resource(admissionPolicies).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var documents []string
	for _, p := range list.Items {
		spec, _, _ := unstructured.NestedMap(p.Object, "spec")
		text, err := yaml.Marshal(map[string]any{"apiVersion": p.GetAPIVersion(), "kind": p.GetKind(),
			"metadata": map[string]any{"name": p.GetName()}, "spec": spec})
		if err != nil {
			t.Fatal(err)
		}
		documents = append(documents, string(text))
	}
	dir, err := os.MkdirTemp("", "policies-")
	if err != nil {
		t.Fatal(err)
	}
	found := filepath.Join(dir, "found.yaml")
	if err := os.WriteFile(found, []byte(strings.Join(documents, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer os.RemoveAll(dir)
		if len(documents) > 0 {
			install(t, found)
		} else {
			removePolicies(t)
		}
	})
	removePolicies(t)
}

// removePolicies deletes every ClusterAdmissionPolicy and waits until their webhooks are gone.
func removePolicies(t *testing.T) {
	t.Helper()
	if out, err := kubectl("delete", "clusteradmissionpolicies", "--all", "--wait=true"); err != nil {
		t.Fatalf("removing the policies: %v\n%s", err, out)
	}
	waitNoPolicyWebhooks(t)
}

// waitNoPolicyWebhooks waits until no webhook configuration of a ClusterAdmissionPolicy is left.
func waitNoPolicyWebhooks(t *testing.T) {
	t.Helper()
	var left []string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		left = policyWebhooks(t)
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("the policies' webhook configurations %v were never removed: %v", left, err)
	}
}

// policyWebhooks names the webhook configurations of ClusterAdmissionPolicies now in the cluster.
func policyWebhooks(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	api := env.client.AdmissionregistrationV1()
	var names []string
	ms, err := api.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms.Items {
		if strings.HasPrefix(m.Name, "clusterwide-") {
			names = append(names, m.Name)
		}
	}
	vs, err := api.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		if strings.HasPrefix(v.Name, "clusterwide-") {
			names = append(names, v.Name)
		}
	}
	return names
}

// policyStatus is a ClusterAdmissionPolicy's status.policyStatus, or "" when it does not exist.
func policyStatus(t *testing.T, name string) string {
	t.Helper()
	p, err := env.dynamic.Resource(admissionPolicies).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	status, _, _ := unstructured.NestedString(p.Object, "status", "policyStatus")
	return status
}

// mustSayMet checks that `kubectl wait` said each policy's condition was met.
func mustSayMet(t *testing.T, out string, policies ...string) {
	t.Helper()
	for _, p := range policies {
		if !strings.Contains(out, "clusteradmissionpolicy.policies.kubewarden.io/"+p+" condition met") {
			t.Fatalf("kubectl wait did not say %s is active:\n%s", p, out)
		}
		if status := policyStatus(t, p); status != "active" {
			t.Fatalf("%s is %q, not active", p, status)
		}
	}
}

// markers are restage-gate's labels and annotations on the workload.
func markers(a *app) []string {
	obj := a.object()
	var found []string
	for key, value := range obj.GetLabels() {
		if strings.HasPrefix(key, "restage-gate.io/") {
			found = append(found, key+"="+value)
		}
	}
	for key, value := range obj.GetAnnotations() {
		if strings.HasPrefix(key, "restage-gate.io/") {
			found = append(found, key+"="+value)
		}
	}
	sort.Strings(found)
	return found
}

// control is the kind's control on the workload, as JSON ("" when absent).
func control(a *app) string {
	value, found, _ := unstructured.NestedFieldNoCopy(a.object().Object, a.kind.Control...)
	if !found {
		return ""
	}
	return toString(value)
}

// mustHaveRolledOnce waits for the app's rollout and checks that it rolled once since it ran:
// every pod replaced once, by pods that mount what it has bound, and nothing of restage-gate
// left on it.
func mustHaveRolledOnce(t testing.TB, a *app, bound string) {
	t.Helper()
	a.waitRolledOut("the release's rollout")
	if ever := a.podsEver(); ever != 2*a.kind.Pods {
		t.Errorf("%s %s: %d pods were ever created, want %d: one rollout", a.kind.Kind, a.namespace, ever, 2*a.kind.Pods)
	}
	for _, sees := range a.podsSee() {
		if sees != bound {
			t.Errorf("%s %s: the pods see %v, want %s each", a.kind.Kind, a.namespace, a.podsSee(), bound)
			break
		}
	}
	if m := markers(a); len(m) > 0 {
		t.Errorf("%s %s: still marked %v", a.kind.Kind, a.namespace, m)
	}
	if a.held() {
		t.Errorf("%s %s: still held: %s", a.kind.Kind, a.namespace, describe(a))
	}
}

// tableRows reads kubectl's tables: each row's cells, under a header starting with `header`
// (several tables, one per resource or API group, may follow each other); "No resources found"
// is no row.
func tableRows(out, header string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0, line == "No resources found":
		case fields[0] == header:
		default:
			rows = append(rows, fields)
		}
	}
	return rows
}

// inNamespaces keeps the rows whose cell `column` is one of the apps' namespaces: the list is of
// the whole cluster, where other tests' namespaces may still be being deleted.
func inNamespaces(rows [][]string, column int, apps ...*app) [][]string {
	mine := map[string]bool{}
	for _, a := range apps {
		mine[a.namespace] = true
	}
	var kept [][]string
	for _, r := range rows {
		if len(r) > column && mine[r[column]] {
			kept = append(kept, r)
		}
	}
	return kept
}

func TestDocsDeferSetup(t *testing.T) {
	d := newDocSteps(t)
	startWithoutPolicies(t)
	d.run(t, "README.md", "kubectl apply -f policy.yaml")
	mustSayMet(t, d.run(t, "README.md", waitDefer), "restage-gate")
	// The API server reads webhook configurations through a watch: an active policy may not be
	// called for a moment.
	waitCalled(t, "clusterwide-restage-gate", canaryNamespace, canary)

	t.Run("a bind into a running app is held and replaces no pod", func(t *testing.T) {
		eachKind(t, func(t *testing.T, k kind) {
			a := newApp(t, k)
			before := a.running()
			a.bind("orders-db")
			a.settled("the bind")
			if n := a.running().replaced(before); n != 0 {
				t.Errorf("the bind replaced %d pods", n)
			}
			if ever := a.podsEver(); ever != k.Pods {
				t.Errorf("%d pods were ever created, want the first %d only", ever, k.Pods)
			}
			a.mustBeHeldWith("+orders-db")
		})
	})
}

func TestDocsGuardAndMonitorSetups(t *testing.T) {
	d := newDocSteps(t)
	startWithoutPolicies(t)

	// Measuring first, alone, as the README says; then the defer policy with its guard.
	d.run(t, "README.md", "kubectl apply -f monitor.yaml")
	mustSayMet(t, d.run(t, "README.md", waitMonitor), "restage-gate-monitor")
	waitCalled(t, "clusterwide-restage-gate-monitor", canaryNamespace, canary)
	d.run(t, "README.md", "kubectl delete clusteradmissionpolicy restage-gate-monitor")
	if status := policyStatus(t, "restage-gate-monitor"); status != "" {
		t.Fatalf("restage-gate-monitor is still there (%s) after its delete", status)
	}
	// The controller's finalizer holds the delete until the webhook is gone.
	if left := policyWebhooks(t); len(left) > 0 {
		t.Fatalf("kubectl delete returned while the API server still calls %v", left)
	}

	d.run(t, "README.md", "kubectl apply -f policy.yaml -f guard.yaml")
	mustSayMet(t, d.run(t, "README.md", waitGuard), "restage-gate", "restage-gate-guard")
	waitCalled(t, "clusterwide-restage-gate", canaryNamespace, canary)
	waitCalled(t, "clusterwide-restage-gate-guard", canaryNamespace, canary)
	list, err := env.dynamic.Resource(admissionPolicies).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.GetName())
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "restage-gate restage-gate-guard" {
		t.Fatalf("the policies are %v, want the defer policy and its guard only", names)
	}
}

func TestDocsOperations(t *testing.T) {
	// No subtests: the apps belong to this test function, which waits on them together (each).
	d := newDocSteps(t)
	install(t, "policy.yaml")
	apps := heldApps(t)
	// Bound and released: it was held, and is not.
	released := runningWith(t, kinds[0], "orders-db")

	// The find-held command lists exactly the held apps.
	out := d.run(t, "README.md", readmeFindHeld)
	if !strings.HasPrefix(out, "KIND ") || !strings.Contains(out, " PENDING") {
		t.Fatalf("no table:\n%s", out)
	}
	var got, want []string
	for _, r := range inNamespaces(tableRows(out, "KIND"), 1, append(apps, released)...) {
		got = append(got, strings.Join(r, " "))
	}
	for _, a := range apps {
		annotations := a.object().GetAnnotations()
		want = append(want, strings.Join([]string{a.kind.Kind, a.namespace, a.name,
			annotations["restage-gate.io/held-since"], annotations["restage-gate.io/pending"]}, " "))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the find-held command listed\n%s\nwant\n%s\n(all it printed:\n%s)", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}

	// The first apply-now line, written for a StatefulSet and for every held kind, releases
	// each, which rolls once.
	annotate := d.command(t, "README.md", applyNow)
	for _, a := range apps {
		mustRunShell(t, forApp(forKind(annotate, a), a))
	}
	each(t, apps, func(a *app) { mustHaveRolledOnce(a.t, a, "orders-db") })

	// Held again, by a second bind; each kind's own line releases it, which rolls once.
	each(t, apps, func(a *app) {
		a.bind("cache")
		a.settled("the second bind")
		a.mustBeHeldWith("+cache")
	})
	rolled := map[*app]int{}
	for _, a := range apps {
		rolled[a] = a.podsEver()
		mustRunShell(t, forApp(d.command(t, "README.md", ownApplyNow(a.kind)), a))
	}
	each(t, apps, func(a *app) {
		a.waitRolledOut("the release's rollout")
		if made := a.podsEver() - rolled[a]; made != a.kind.Pods {
			a.t.Errorf("%s: the release made %d pods, want %d: one rollout", a.kind.Kind, made, a.kind.Pods)
		}
		if m := markers(a); len(m) > 0 || a.held() {
			a.t.Errorf("%s: still held: %s", a.kind.Kind, describe(a))
		}
		for _, sees := range a.podsSee() {
			if sees != "cache,orders-db" {
				a.t.Errorf("%s: the pods see %v, want cache,orders-db each", a.kind.Kind, a.podsSee())
				break
			}
		}
	})
	// Released, none is listed any more.
	out = d.run(t, "README.md", readmeFindHeld)
	if rows := inNamespaces(tableRows(out, "KIND"), 1, apps...); len(rows) > 0 {
		t.Errorf("released, and still listed: %v", rows)
	}
	// The README's Rollout line runs in TestRolloutBindIsHeldOnTheRealAPIServer.
}

func TestDocsInstall(t *testing.T) {
	d := newDocSteps(t)

	t.Run("a bind in a namespace labelled for the documented namespaceSelector is held, in another it rolls", func(t *testing.T) {
		selector := documentedSelector(t, "namespaceSelector")
		policy := policyWithSettings(t, "policy.yaml", func(policy map[string]any) {
			policy["spec"].(map[string]any)["namespaceSelector"] = selector
		})
		label := d.command(t, "docs/install.md", "kubectl label namespace NAMESPACE …")
		labelKey := strings.SplitN(strings.Fields(label)[len(strings.Fields(label))-1], "=", 2)[0]
		// install's probes write the canary, which must be in the policy's scope.
		mustRunShell(t, namespaceWord.ReplaceAllLiteralString(label, canaryNamespace))
		t.Cleanup(func() {
			if out, err := kubectl("label", "namespace", canaryNamespace, labelKey+"-"); err != nil {
				t.Errorf("unlabelling the canary's namespace: %v\n%s", err, out)
			}
		})
		install(t, policy)

		labelled := newApp(t, kinds[0])
		mustRunShell(t, forApp(label, labelled))
		waitCalled(t, "clusterwide-restage-gate", labelled.namespace, labelled.kind.resourceName(labelled.name))
		unlabelled := newApp(t, kinds[0])
		before := labelled.running()
		labelled.bind("orders-db")
		unlabelled.bind("orders-db")
		labelled.settled("the bind")
		if n := labelled.running().replaced(before); n != 0 {
			t.Errorf("in the labelled namespace the bind replaced %d pods", n)
		}
		labelled.mustBeHeldWith("+orders-db")
		unlabelled.settled("the bind")
		if unlabelled.held() {
			t.Fatalf("the bind in a namespace without the label is held: the selector does not keep the policy out of it: %s", describe(unlabelled))
		}
		mustHaveRolledOnce(t, unlabelled, "orders-db")
	})

	t.Run("an upgrade keeps every hold", func(t *testing.T) {
		// The release before: the same manifests with another tag of the module.
		previous := func(policy map[string]any) {
			spec := policy["spec"].(map[string]any)
			module := spec["module"].(string)
			spec["module"] = module[:strings.LastIndex(module, ":")+1] + "v0.0.1"
		}
		install(t, policyWithSettings(t, "policy.yaml", previous), policyWithSettings(t, "guard.yaml", previous))
		apps := heldApps(t)
		stored := map[*app]string{}
		for _, a := range apps {
			stored[a] = a.storedState()
		}
		var want []string
		for _, a := range apps {
			want = append(want, a.namespace+" "+strings.ToLower(a.kind.Kind)+"."+a.kind.Group+"/"+a.name)
		}
		sort.Strings(want)
		listed := func(step string) {
			t.Helper()
			out := d.run(t, "docs/install.md", listHeld)
			var got []string
			for _, r := range inNamespaces(tableRows(out, "NAMESPACE"), 0, apps...) {
				got = append(got, r[0]+" "+r[1])
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s the list of held workloads is\n%s\nwant\n%s\n(all it printed:\n%s)", step, strings.Join(got, "\n"), strings.Join(want, "\n"), out)
			}
		}
		listed("before the upgrade")

		d.run(t, "docs/install.md", "kubectl apply -f policy.yaml -f guard.yaml")
		mustSayMet(t, d.run(t, "docs/install.md", waitGuard), "restage-gate", "restage-gate-guard")
		for _, name := range []string{"restage-gate", "restage-gate-guard"} {
			out, err := kubectl("get", "clusteradmissionpolicy", name, "-o", "jsonpath={.spec.module}")
			if err != nil || strings.HasSuffix(out, ":v0.0.1") {
				t.Fatalf("%s runs %s after the upgrade: %v", name, out, err)
			}
		}

		listed("after the upgrade")
		each(t, apps, func(a *app) {
			a.settled("the upgrade")
			if got := a.storedState(); got != stored[a] {
				a.t.Errorf("%s: the upgrade changed the held workload:\nbefore %s\nafter  %s", a.kind.Kind, stored[a], got)
			}
			if ever := a.podsEver(); ever != a.kind.Pods {
				a.t.Errorf("%s: %d pods were ever created, want the first %d only", a.kind.Kind, ever, a.kind.Pods)
			}
		})
	})

	t.Run("window-release.yaml installs in Kubewarden's namespace", func(t *testing.T) {
		install(t, "policy.yaml")
		kubewardenNamespace(t)
		// The tests after this one start without the job: helm would not adopt its objects.
		t.Cleanup(func() {
			if out, err := kubectl("delete", "-f", "window-release-binding.yaml", "-f", "window-release.yaml", "--ignore-not-found"); err != nil {
				t.Errorf("removing the window job: %v\n%s", err, out)
			}
		})
		d.run(t, "docs/install.md", applyWindowJob)
		d.run(t, "docs/install.md", applyBinding)
		out, err := kubectl("get", "-f", "window-release.yaml", "-f", "window-release-binding.yaml", "-o", "name")
		if err != nil {
			t.Fatalf("not every object of window-release.yaml is there: %v\n%s", err, out)
		}
		// The API server type-checks each admission policy's expressions against the schemas
		// of the kinds it matches, which the release tool's tests cannot (docs/install.md).
		policies := 0
		for _, name := range strings.Fields(out) {
			if !strings.HasPrefix(name, "validatingadmissionpolicy.") {
				continue
			}
			policies++
			var checked string
			err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				out, err := kubectl("get", name, "-o", "jsonpath={.status.typeChecking}")
				checked = out
				return err == nil && out != "", nil
			})
			if err != nil {
				t.Fatalf("%s was never type-checked: %s", name, checked)
			}
			var typeChecking struct {
				ExpressionWarnings []any `json:"expressionWarnings"`
			}
			if err := json.Unmarshal([]byte(checked), &typeChecking); err != nil {
				t.Fatalf("%s: %v: %s", name, err, checked)
			}
			if len(typeChecking.ExpressionWarnings) > 0 {
				t.Errorf("the API server's type-checking of %s warns: %s", name, checked)
			}
		}
		if policies == 0 {
			t.Fatalf("window-release.yaml installed no admission policy:\n%s", out)
		}
	})
}

// documentedSelector is the selector `key` of docs/install.md's yaml blocks.
func documentedSelector(t *testing.T, key string) any {
	t.Helper()
	for _, block := range docBlocks(t, "docs/install.md", "yaml") {
		var fragment map[string]any
		if err := yaml.Unmarshal([]byte(dedent(block)), &fragment); err != nil {
			continue
		}
		if selector, ok := fragment[key]; ok && len(fragment) == 1 {
			return selector
		}
	}
	t.Fatalf("docs/install.md has no yaml block of a %s", key)
	return nil
}

// dedent leaves out the indentation every line of the text has.
func dedent(text string) string {
	lines := strings.Split(text, "\n")
	least := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); least < 0 || n < least {
			least = n
		}
	}
	for i, l := range lines {
		if len(l) >= least && least > 0 {
			lines[i] = l[least:]
		}
	}
	return strings.Join(lines, "\n")
}

// kubewardenNamespace creates Kubewarden's namespace, where window-release.yaml installs its
// job, as Kubewarden's install would have.
func kubewardenNamespace(t *testing.T) {
	t.Helper()
	if _, err := kubectl("get", "namespace", jobNamespace); err != nil {
		if out, err := kubectl("create", "namespace", jobNamespace); err != nil {
			t.Fatalf("creating the namespace %s: %v\n%s", jobNamespace, err, out)
		}
	}
}

// waitNamespacesGone waits until no namespace is being deleted: the uninstall writes every held
// workload of the cluster, and one whose namespace goes away under the write fails it.
func waitNamespacesGone(t *testing.T) {
	t.Helper()
	var terminating []string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		terminating = nil
		for _, ns := range list.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, ns.Name)
			}
		}
		return len(terminating) == 0, nil
	})
	if err != nil {
		t.Fatalf("namespaces %v are still being deleted: %v", terminating, err)
	}
}

func TestDocsUninstall(t *testing.T) {
	d := newDocSteps(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("docs/uninstall.md's step 4 uses jq: apt-get install jq")
	}
	waitNamespacesGone(t)
	install(t, "policy.yaml", "guard.yaml")
	kubewardenNamespace(t)
	d.run(t, "docs/install.md", applyWindowJob)
	d.run(t, "docs/install.md", applyBinding)
	// A served group of custom resources has its own job, applied after it (docs/install.md).
	if out, _ := kubectl("api-resources", "--api-group=argoproj.io", "-o", "name"); strings.TrimSpace(out) != "" {
		if out, err := kubectl("apply", "-f", "window-release-argoproj.io.yaml"); err != nil {
			t.Fatalf("kubectl apply -f window-release-argoproj.io.yaml: %v\n%s", err, out)
		}
	}

	// Held before the procedure begins, and held between its steps 2 and 3: one of each kind.
	apps := newApps(t, append(append([]kind{}, kinds...), kinds...)...)
	early, late := apps[:len(kinds)], apps[len(kinds):]
	original := map[*app]string{}
	for _, a := range apps {
		original[a] = control(a)
	}
	each(t, early, func(a *app) {
		a.bind("orders-db")
		a.settled("the bind")
		a.mustBeHeldWith("+orders-db")
	})

	windowJobGone := func() {
		for _, file := range []string{"window-release-binding.yaml", "window-release.yaml", "window-release-argoproj.io.yaml"} {
			out, err := kubectl("get", "-f", file, "--ignore-not-found", "-o", "name")
			if err != nil || strings.TrimSpace(out) != "" {
				t.Fatalf("objects of %s are left: %v\n%s", file, err, out)
			}
		}
	}
	steps := []struct {
		// the page's commands the step runs, in one shell: a block as a user pastes it
		commands []string
		then     func(out string)
	}{
		{[]string{"kubectl delete -f window-release-binding.yaml …"}, func(string) { windowJobGone() }},
		{[]string{`if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl annotate …`}, func(string) {
			each(t, early, func(a *app) { mustHaveRolledOnce(a.t, a, "orders-db") })
			each(t, late, func(a *app) {
				a.bind("orders-db")
				a.settled("the bind between steps 2 and 3")
				a.mustBeHeldWith("+orders-db")
			})
		}},
		{[]string{"kubectl delete clusteradmissionpolicy restage-gate-guard"}, func(string) {
			if status := policyStatus(t, "restage-gate-guard"); status != "" {
				t.Fatalf("the guard is still there (%s)", status)
			}
		}},
		{[]string{"kubectl delete clusteradmissionpolicy restage-gate"}, func(string) {
			if status := policyStatus(t, "restage-gate"); status != "" {
				t.Fatalf("the policy is still there (%s)", status)
			}
			// The page relies on Kubewarden removing the webhook before the policy goes (its
			// finalizer); this control plane's controller removes it just after, so the next
			// step waits for that.
			waitNoPolicyWebhooks(t)
		}},
		{[]string{"restore=' …", `if [ -n "$(kubectl api-resources --api-group=apps -o name)" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o json …`}, func(string) {
			each(t, late, func(a *app) { mustHaveRolledOnce(a.t, a, "orders-db") })
		}},
		{[]string{listHeld}, func(out string) {
			// once for each API group the cluster serves
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, line := range lines {
				if line != "No resources found" {
					t.Errorf("the check printed\n%s\nwant No resources found", out)
					break
				}
			}
		}},
	}

	// The whole page, in its order.
	var want []string
	for _, s := range steps {
		want = append(want, s.commands...)
	}
	page := docCommands(t, "docs/uninstall.md")
	if len(page) != len(want) {
		t.Fatalf("docs/uninstall.md has %d commands, want %d:\n%s", len(page), len(want), strings.Join(page, "\n\n"))
	}
	for i, c := range page {
		if !docNames(want[i], c) {
			t.Fatalf("docs/uninstall.md's command %d is\n%s\nwant `%s`", i+1, c, want[i])
		}
	}
	for _, s := range steps {
		var block []string
		for _, c := range s.commands {
			block = append(block, d.command(t, "docs/uninstall.md", c))
		}
		s.then(mustRunShell(t, strings.Join(block, "\n")))
	}

	each(t, apps, func(a *app) {
		a.settled("the uninstall")
		if ever := a.podsEver(); ever != 2*a.kind.Pods {
			a.t.Errorf("%s %s: %d pods were ever created, want %d: one rollout", a.kind.Kind, a.namespace, ever, 2*a.kind.Pods)
		}
		if got := control(a); got != original[a] {
			a.t.Errorf("%s %s: its control is %s, want %s as before the bind", a.kind.Kind, a.namespace, got, original[a])
		}
		if m := markers(a); len(m) > 0 {
			a.t.Errorf("%s %s: still marked %v", a.kind.Kind, a.namespace, m)
		}
	})
	list, err := env.dynamic.Resource(admissionPolicies).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Errorf("%d ClusterAdmissionPolicies remain", len(list.Items))
	}
	windowJobGone()
}

// The chart as the README and docs/install.md install it: helm install, the policy and its
// guard active with the same settings and selectors, the window job in two steps (everything
// but the permission, then the permission once its admission policy is in the cluster), the
// render a settings check reads, and helm uninstall removing all of it.
func TestDocsChart(t *testing.T) {
	d := newDocSteps(t)
	kubewardenNamespace(t)
	if out, err := kubectl("delete", "clusteradmissionpolicies", "--all", "--wait=true"); err != nil {
		t.Fatalf("removing the previous setup: %v\n%s", err, out)
	}
	helm := func(args ...string) (string, error) {
		cmd := exec.Command(os.Getenv("HELM"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.cluster.Kubeconfig)
		cmd.Dir = env.repo
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = helm("uninstall", "restage-gate", "-n", chartNamespace, "--wait") })
	d.run(t, "README.md", helmInstall)
	mustSayMet(t, d.run(t, "README.md", waitGuard), "restage-gate", "restage-gate-guard")
	listed := d.run(t, "docs/install.md", "kubectl get clusteradmissionpolicies")
	for _, name := range []string{"restage-gate ", "restage-gate-guard "} {
		if !strings.Contains(listed, name) {
			t.Errorf("kubectl get clusteradmissionpolicies does not list %s:\n%s", name, listed)
		}
	}
	spec := func(name string) map[string]any {
		out, err := kubectl("get", "clusteradmissionpolicy", name, "-o", "jsonpath={.spec}")
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		delete(s["settings"].(map[string]any), "mode")
		return s
	}
	policy, guard := spec("restage-gate"), spec("restage-gate-guard")
	for _, field := range []string{"module", "rules", "namespaceSelector", "objectSelector", "settings"} {
		if toString(policy[field]) != toString(guard[field]) {
			t.Errorf("the guard's %s is %s, the policy's %s", field, toString(guard[field]), toString(policy[field]))
		}
	}
	if !strings.Contains(toString(policy["namespaceSelector"]), "kube-system") {
		t.Errorf("the policy sees the cluster's own namespaces: %s", toString(policy["namespaceSelector"]))
	}

	const job = "restage-gate-window-release"
	exists := func(kind string) bool {
		out, err := kubectl("get", kind, job, "--ignore-not-found", "-o", "name")
		if err != nil {
			t.Fatalf("kubectl get %s %s: %v\n%s", kind, job, err, out)
		}
		return strings.TrimSpace(out) != ""
	}
	d.run(t, "docs/install.md", helmWindows)
	for _, kind := range []string{"validatingadmissionpolicy", "validatingadmissionpolicybinding", "clusterrole"} {
		if !exists(kind) {
			t.Errorf("the upgrade that sets the windows installed no %s", kind)
		}
	}
	if out, err := kubectl("get", "cronjob", job, "-n", chartNamespace, "-o", "name"); err != nil {
		t.Errorf("the upgrade that sets the windows installed no CronJob: %v\n%s", err, out)
	}
	if exists("clusterrolebinding") {
		t.Fatal("the job's permission was bound in the step that installed its admission policy")
	}
	d.run(t, "docs/install.md", helmBind)
	if !exists("clusterrolebinding") {
		t.Fatal("the second upgrade did not bind the job's permission")
	}

	// The settings check's render, of the user's values.
	values := filepath.Join(env.repo, "values.yaml")
	rendered := filepath.Join(env.repo, "restage-gate.yaml")
	t.Cleanup(func() { _ = os.Remove(values); _ = os.Remove(rendered) })
	if err := os.WriteFile(values, []byte("settings:\n  extraVolumePrefixes: [creds-]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.run(t, "docs/install.md", helmRender)
	text, err := os.ReadFile(rendered)
	if err != nil {
		t.Fatal(err)
	}
	var cap struct {
		Kind string `json:"kind"`
		Spec struct {
			Settings map[string]any `json:"settings"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(text, &cap); err != nil || cap.Kind != "ClusterAdmissionPolicy" || toString(cap.Spec.Settings["extraVolumePrefixes"]) != `["creds-"]` {
		t.Errorf("the settings check reads no policy with the values' settings (%v):\n%s", err, text)
	}

	if out, err := helm("uninstall", "restage-gate", "-n", chartNamespace, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	for _, kind := range []string{"clusterrolebinding", "validatingadmissionpolicy", "clusterrole"} {
		if exists(kind) {
			t.Errorf("helm uninstall left the %s", kind)
		}
	}
}
