// A scenario's outcome as a row of the table the cluster simulation writes into
// docs/testing.md (e2e-tests/tests/scenarios.rs): pods restarted before the restage, restarts
// and rollouts at the restage, what the pods see at the end, refused writes. A scenario that
// runs here and in the simulation under the same name must have the same row.
package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// row is one line of the table.
type row struct {
	restartsBefore int
	// atRestage is nil when the scenario has no restage step.
	atRestage *[2]int
	podsSee   string
	refused   int
}

func (r row) cells() []string {
	at := "—"
	if r.atRestage != nil {
		at = fmt.Sprintf("%d / %d", r.atRestage[0], r.atRestage[1])
	}
	return []string{fmt.Sprint(r.restartsBefore), at, r.podsSee, fmt.Sprint(r.refused)}
}

// measure runs a scenario's restage step (nil when it has none) and reads the row: restarts
// are pods the controllers replaced (pods created since the app ran, less those a scenario's
// own deletes and scale-ups made), rollouts the templates they were made from.
func (a *app) measure(restage func()) row {
	a.t.Helper()
	var at *[2]int
	restarts := func() int { return a.restartsSince(a.baseline) - a.userMade }
	before := restarts()
	if restage != nil {
		mark := a.snapshotSeen()
		made := a.userMade
		restage()
		a.waitRolledOut("the restage's rollout")
		restarts := a.restartsSince(mark) - (a.userMade - made)
		at = &[2]int{restarts, a.rolloutsSince(mark)}
	} else {
		if a.held() {
			a.settled("the scenario's last write")
		} else {
			// Nothing holds it: whatever the last write changed rolls out to the end.
			a.waitRolledOut("the scenario's rollout")
		}
		before = restarts()
	}
	return row{restartsBefore: before, atRestage: at, podsSee: a.podsSeeCell()}
}

// snapshotSeen is the set of pods the namespace has had so far.
func (a *app) snapshotSeen() map[types.UID]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[types.UID]bool{}
	for uid := range a.seen {
		seen[uid] = true
	}
	return seen
}

func (a *app) createdSince(mark map[types.UID]bool) []corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var pods []corev1.Pod
	for uid, p := range a.seen {
		if !mark[uid] {
			pods = append(pods, p)
		}
	}
	return pods
}

func (a *app) restartsSince(mark map[types.UID]bool) int {
	return len(a.createdSince(mark))
}

// rolloutsSince counts the templates (by the controller's hash label) pods were made from.
func (a *app) rolloutsSince(mark map[types.UID]bool) int {
	hashes := map[string]bool{}
	for _, p := range a.createdSince(mark) {
		for _, label := range []string{"controller-revision-hash", "pod-template-hash"} {
			if h := p.Labels[label]; h != "" {
				hashes[h] = true
			}
		}
	}
	return len(hashes)
}

// podsSeeCell groups the live pods by what they mount: `2 pods: —; 1 pod: orders-db`, largest
// group first, binding guids shortened as the simulation shortens them.
func (a *app) podsSeeCell() string {
	counts := map[string]int{}
	for _, p := range a.pods() {
		var names []string
		for _, n := range mountedBindings(p) {
			names = append(names, short(n))
		}
		what := "—"
		if len(names) > 0 {
			what = strings.Join(names, ", ")
		}
		counts[what]++
	}
	return groupCell(counts)
}

func groupCell(counts map[string]int) string {
	var groups []string
	for what, n := range counts {
		plural := "s"
		if n == 1 {
			plural = ""
		}
		groups = append(groups, fmt.Sprintf("%d pod%s: %s", n, plural, what))
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] > groups[j] })
	return strings.Join(groups, "; ")
}

// short is a binding name as the simulation prints it: a guid by its first eight characters.
func short(name string) string {
	if len(name) == 36 && strings.Count(name, "-") == 4 {
		return name[:8] + "…"
	}
	return name
}

// mountedBindings names the bindings a pod mounts: the directory under SERVICE_BINDING_ROOT of
// each volume the projector added, sorted.
func mountedBindings(p corev1.Pod) []string {
	projected := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "servicebinding-") {
			projected[v.Name] = true
		}
	}
	names := map[string]bool{}
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if projected[m.Name] {
				names[filepath.Base(m.MountPath)] = true
			}
		}
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	return sorted
}

// simulationRows reads the simulation's table from docs/testing.md: kind and scenario to
// cells.
func simulationRows(t *testing.T) map[[2]string][]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(env.repo, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(text)
	begin := strings.Index(body, "<!-- scenarios:begin -->")
	end := strings.Index(body, "<!-- scenarios:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/testing.md has no scenarios:begin/end table")
	}
	rows := map[[2]string][]string{}
	for _, line := range strings.Split(body[begin:end], "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| workload") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 6 {
			continue
		}
		rows[[2]string{cells[0], cells[1]}] = cells[2:]
	}
	return rows
}

// agrees checks a measured row against the simulation's row of the same name, which must exist.
func agrees(t *testing.T, k kind, scenario string, got row) {
	t.Helper()
	want, ok := simulationRows(t)[[2]string{k.Kind, scenario}]
	if !ok {
		t.Fatalf("docs/testing.md has no simulation row %q for %s", scenario, k.Kind)
	}
	cells := got.cells()
	if !sameCells(cells, want) {
		t.Fatalf("%s, %q: the control plane gives | %s |, the simulation | %s |",
			k.Kind, scenario, strings.Join(cells, " | "), strings.Join(want, " | "))
	}
}

// sameCells compares rows, the pods column as groups in any order.
func sameCells(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if i == 2 {
			if !sameGroups(got[i], want[i]) {
				return false
			}
		} else if got[i] != want[i] {
			return false
		}
	}
	return true
}

func sameGroups(a, b string) bool {
	split := func(s string) []string {
		parts := strings.Split(s, "; ")
		sort.Strings(parts)
		return parts
	}
	return strings.Join(split(a), "; ") == strings.Join(split(b), "; ")
}
