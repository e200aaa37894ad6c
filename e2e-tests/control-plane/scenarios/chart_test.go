// The Helm chart (charts/restage-gate) rendered as `helm install` renders it on this control
// plane: helm template with the cluster's version and every API it serves, the chart's
// .Capabilities, and a test's values. HELM is the helm binary (`make test-control-plane` sets
// it).
package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartNamespace is the Kubewarden namespace the chart is told of, and so where its window job
// runs.
const chartNamespace = "kubewarden"

// renderChart writes what the chart renders with values (and, when given, only those
// templates) to a file and returns its path.
func renderChart(t *testing.T, values map[string]any, templates ...string) string {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM is not set: run these tests with `make test-control-plane`")
	}
	version, err := env.client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := env.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): a subtest's name may hold a comma, and helm splits --values at commas.
	dir, err := os.MkdirTemp("", "chart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	valuesFile := filepath.Join(dir, "values.yaml")
	text, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(valuesFile, text, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"template", "restage-gate", filepath.Join(env.repo, "charts", "restage-gate"),
		"--namespace", chartNamespace, "--kube-version", version.GitVersion, "--values", valuesFile}
	// What helm reads from discovery on install: each group version and each kind in it.
	for _, l := range lists {
		args = append(args, "--api-versions", l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				args = append(args, "--api-versions", l.GroupVersion+"/"+r.Kind)
			}
		}
	}
	for _, tpl := range templates {
		args = append(args, "--show-only", "templates/"+tpl)
	}
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "rendered.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// renderedKinds lists the kind/name of every document of a rendered file.
func renderedKinds(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, doc := range strings.Split(string(text), "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind != "" {
			out = append(out, obj.Kind+"/"+obj.Metadata.Name)
		}
	}
	return out
}
