// Shared test helpers: the Korifi v0.14 reference objects the real runtime wrote, and a view of a
// StatefulSet as the API server stores it (defaulted, empty lists dropped), so a projection made
// here compares with what was read back from a cluster.

package servicebinding

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sappsv1 "k8s.io/kubernetes/pkg/apis/apps/v1"
)

// referenceDir holds the objects servicebinding/runtime wrote on Korifi v0.14.
const referenceDir = "../../fixtures/korifi-v0.14"

func readReference(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(referenceDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func referenceWorkload(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(readReference(t, name)); err != nil {
		t.Fatal(err)
	}
	return u
}

func referenceBinding(t *testing.T, name string) Binding {
	t.Helper()
	b, err := ParseBinding(readReference(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func workloadFromJSON(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return u
}

var statefulSetDefaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := k8sappsv1.RegisterDefaults(s); err != nil {
		panic(err)
	}
	return s
}()

// stored is the StatefulSet as the API server would keep it: typed, defaulted, re-encoded.
func stored(t *testing.T, u *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sts); err != nil {
		t.Fatal(err)
	}
	statefulSetDefaults.Default(sts)
	return generic(t, sts)
}

// generic re-decodes v as plain JSON values, so values from different sources compare.
func generic(t *testing.T, v interface{}) map[string]interface{} {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func at(v map[string]interface{}, path ...string) interface{} {
	var cur interface{} = v
	for _, p := range path {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// requireSame fails with the JSON paths where got and want differ.
func requireSame(t *testing.T, what string, got, want interface{}) {
	t.Helper()
	var diffs []string
	diffJSON("", got, want, &diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
		}
		t.Fatalf("%s differs:\n%s", what, joinLines(diffs))
	}
}

func diffJSON(path string, got, want interface{}, diffs *[]string) {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want %s", orRoot(path), show(got), show(want)))
			return
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: missing, want %s", path, k, show(wv)))
			case !wok:
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: unexpected %s", path, k, show(gv)))
			default:
				diffJSON(path+"/"+k, gv, wv, diffs)
			}
		}
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want %s", orRoot(path), show(got), show(want)))
			return
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s/%d", path, i), g[i], w[i], diffs)
		}
	default:
		if !reflect.DeepEqual(got, want) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want %s", orRoot(path), show(got), show(want)))
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

func show(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}
