// The servicebinding.io projector: what projecting a ServiceBinding writes into a workload's pod
// template and what unprojecting removes, ported from package projector of
// github.com/servicebinding/runtime (binding.go, metapodtemplate.go) for workloads whose pod
// template is at spec.template, with the runtime's names, ordering and quirks kept.

package servicebinding

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// Names the projector writes.
const (
	ServiceBindingRootEnv     = "SERVICE_BINDING_ROOT"
	DefaultServiceBindingRoot = "/bindings"
	ProjectorGroup            = "projector.servicebinding.io"
	VolumePrefix              = "servicebinding-"
	SecretAnnotationPrefix    = ProjectorGroup + "/secret-"
	TypeAnnotationPrefix      = ProjectorGroup + "/type-"
	ProviderAnnotationPrefix  = ProjectorGroup + "/provider-"
	MappingAnnotationPrefix   = ProjectorGroup + "/mapping-"
	VolumeDefaultMode         = int32(0644)
)

// PodSpecableMapping is the ClusterWorkloadResourceMapping spec the runtime uses for a kind that
// has no mapping of its own, exactly as it records it in the workload's mapping annotation.
const PodSpecableMapping = `{"versions":[{"version":"*","annotations":".spec.template.metadata.annotations","containers":[{"path":".spec.template.spec.initContainers[*]","name":".name","env":".env","volumeMounts":".volumeMounts"},{"path":".spec.template.spec.containers[*]","name":".name","env":".env","volumeMounts":".volumeMounts"}],"volumes":".spec.template.spec.volumes"}]}`

// Where the pod-specable mapping reads and writes; containers paths in the mapping's order.
var (
	workloadAnnotationsPath = []string{"metadata", "annotations"}
	templateAnnotationsPath = []string{"spec", "template", "metadata", "annotations"}
	volumesPath             = []string{"spec", "template", "spec", "volumes"}
	containerListPaths      = [][]string{
		{"spec", "template", "spec", "initContainers"},
		{"spec", "template", "spec", "containers"},
	}
)

// Project writes the binding into the workload as the runtime's projector does: it first removes
// any earlier projection of the same binding, then, when the binding has a secret and targets this
// workload (by name or selector), adds the volume, the mounts, SERVICE_BINDING_ROOT, the env
// entries and the annotations. Projecting twice leaves the same object as projecting once.
func Project(workload *unstructured.Unstructured, binding Binding) error {
	binding.Default()
	// rather than merge with an earlier projection, the runtime removes it first
	if err := Unproject(workload, binding); err != nil {
		return err
	}
	if !shouldProject(&binding, workload) {
		return nil
	}
	mpt, err := readMetaPodTemplate(workload)
	if err != nil {
		return err
	}
	project(&binding, mpt)
	mpt.workloadAnnotations[mappingAnnotationName(&binding)] = PodSpecableMapping
	return mpt.writeTo(workload)
}

// Unproject removes what projecting the binding wrote, except SERVICE_BINDING_ROOT, which the
// runtime leaves because something else may depend on it.
func Unproject(workload *unstructured.Unstructured, binding Binding) error {
	if err := checkLocalMapping(&binding, workload); err != nil {
		return err
	}
	mpt, err := readMetaPodTemplate(workload)
	if err != nil {
		return err
	}
	unproject(&binding, mpt)
	delete(mpt.workloadAnnotations, mappingAnnotationName(&binding))
	return mpt.writeTo(workload)
}

// IsProjected tells whether the workload carries the binding's mapping annotation, which is how
// the runtime recognises a workload it projected into.
func IsProjected(workload *unstructured.Unstructured, binding Binding) bool {
	_, ok := workload.GetAnnotations()[mappingAnnotationName(&binding)]
	return ok
}

// Targets tells whether the binding's workload reference names or selects the workload, the
// runtime's test before it projects.
func Targets(binding Binding, workload *unstructured.Unstructured) bool {
	ref := binding.Spec.Workload
	if ref.Name != "" {
		return ref.Name == workload.GetName()
	}
	if ref.Selector != nil {
		ls, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return false
		}
		return ls.Matches(labels.Set(workload.GetLabels()))
	}
	return false
}

func shouldProject(binding *Binding, workload *unstructured.Unstructured) bool {
	if binding.SecretName() == "" {
		// no secret to bind
		return false
	}
	return Targets(*binding, workload)
}

// checkLocalMapping reads the mapping recorded by an earlier projection. The runtime unprojects
// with that mapping; this stand-in only knows the pod-specable one, so it refuses any other
// rather than unproject at the wrong paths.
func checkLocalMapping(binding *Binding, workload *unstructured.Unstructured) error {
	data, ok := workload.GetAnnotations()[mappingAnnotationName(binding)]
	if !ok {
		return nil
	}
	var recorded, known interface{}
	if err := json.Unmarshal([]byte(data), &recorded); err != nil {
		return fmt.Errorf("mapping annotation of %s/%s: %w", workload.GetNamespace(), workload.GetName(), err)
	}
	if err := json.Unmarshal([]byte(PodSpecableMapping), &known); err != nil {
		return err
	}
	if !reflect.DeepEqual(recorded, known) {
		return fmt.Errorf("workload %s/%s was projected with a ClusterWorkloadResourceMapping other than the pod-specable one, which this projector does not support: %s", workload.GetNamespace(), workload.GetName(), data)
	}
	return nil
}

// metaPodTemplate is the part of a workload the projector reads and writes. Entries go through the
// typed core/v1 structs, as in the runtime, so fields it does not know are dropped on the way.
type metaPodTemplate struct {
	workloadAnnotations map[string]string
	templateAnnotations map[string]string
	containers          []metaContainer
	volumes             []corev1.Volume
}

type metaContainer struct {
	name         *string
	env          []corev1.EnvVar
	volumeMounts []corev1.VolumeMount
}

func readMetaPodTemplate(workload *unstructured.Unstructured) (*metaPodTemplate, error) {
	mpt := &metaPodTemplate{
		workloadAnnotations: map[string]string{},
		templateAnnotations: map[string]string{},
		containers:          []metaContainer{},
		volumes:             []corev1.Volume{},
	}
	u := workload.Object
	if err := getAt(u, workloadAnnotationsPath, &mpt.workloadAnnotations); err != nil {
		return nil, err
	}
	if err := getAt(u, templateAnnotationsPath, &mpt.templateAnnotations); err != nil {
		return nil, err
	}
	for _, p := range containerListPaths {
		for _, c := range containerList(u, p) {
			mc := metaContainer{
				name:         ptr.To(""),
				env:          []corev1.EnvVar{},
				volumeMounts: []corev1.VolumeMount{},
			}
			if err := getAt(c, []string{"name"}, mc.name); err != nil {
				return nil, err
			}
			if err := getAt(c, []string{"env"}, &mc.env); err != nil {
				return nil, err
			}
			if err := getAt(c, []string{"volumeMounts"}, &mc.volumeMounts); err != nil {
				return nil, err
			}
			mpt.containers = append(mpt.containers, mc)
		}
	}
	if err := getAt(u, volumesPath, &mpt.volumes); err != nil {
		return nil, err
	}
	return mpt, nil
}

// writeTo writes every field back, empty ones included (the runtime writes `env: []`,
// `volumeMounts: []`, `volumes: []` and empty annotation maps), then passes the whole object
// through JSON as the runtime's unstructured conversion does.
func (mpt *metaPodTemplate) writeTo(workload *unstructured.Unstructured) error {
	u := workload.Object
	if err := setAt(u, workloadAnnotationsPath, mpt.workloadAnnotations); err != nil {
		return err
	}
	if err := setAt(u, templateAnnotationsPath, mpt.templateAnnotations); err != nil {
		return err
	}
	ci := 0
	for _, p := range containerListPaths {
		for _, c := range containerList(u, p) {
			mc := mpt.containers[ci]
			if err := setAt(c, []string{"name"}, *mc.name); err != nil {
				return err
			}
			if err := setAt(c, []string{"env"}, mc.env); err != nil {
				return err
			}
			if err := setAt(c, []string{"volumeMounts"}, mc.volumeMounts); err != nil {
				return err
			}
			ci++
		}
	}
	if err := setAt(u, volumesPath, mpt.volumes); err != nil {
		return err
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return workload.UnmarshalJSON(data)
}

// containerList is what the mapping's container path `[*]` finds: nothing when the list is
// missing or is not a list.
func containerList(u map[string]interface{}, p []string) []interface{} {
	v, found, err := lookup(u, p)
	if err != nil || !found {
		return nil
	}
	list, _ := v.([]interface{})
	return list
}

// lookup walks maps along p; found is false at a missing or null field, and a non-map on the way
// is an error, as in the runtime's walker.
func lookup(v interface{}, p []string) (interface{}, bool, error) {
	for _, key := range p {
		if v == nil {
			return nil, false, nil
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil, false, fmt.Errorf("unhandled kind %T at %q", v, key)
		}
		v = m[key]
	}
	if v == nil {
		return nil, false, nil
	}
	return v, true, nil
}

func getAt(source interface{}, p []string, target interface{}) error {
	v, found, err := lookup(source, p)
	if err != nil || !found {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, target)
}

func setAt(target interface{}, p []string, value interface{}) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	var out interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	m, ok := target.(map[string]interface{})
	if !ok {
		return fmt.Errorf("unhandled kind %T", target)
	}
	for _, key := range p[:len(p)-1] {
		switch next := m[key].(type) {
		case map[string]interface{}:
			m = next
		case nil:
			created := map[string]interface{}{}
			m[key] = created
			m = created
		default:
			return fmt.Errorf("unhandled kind %T at %q", next, key)
		}
	}
	m[p[len(p)-1]] = out
	return nil
}

func project(binding *Binding, mpt *metaPodTemplate) {
	projectVolume(binding, mpt)
	for i := range mpt.containers {
		projectContainer(binding, mpt, &mpt.containers[i])
	}
}

func unproject(binding *Binding, mpt *metaPodTemplate) {
	unprojectVolume(binding, mpt)
	for i := range mpt.containers {
		unprojectContainer(binding, mpt, &mpt.containers[i])
	}
	delete(mpt.templateAnnotations, secretAnnotationName(binding))
	delete(mpt.templateAnnotations, typeAnnotationName(binding))
	delete(mpt.templateAnnotations, providerAnnotationName(binding))
}

func projectVolume(binding *Binding, mpt *metaPodTemplate) {
	volume := corev1.Volume{
		Name: volumeName(binding),
		VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptr.To(VolumeDefaultMode),
				Sources: []corev1.VolumeProjection{{
					Secret: &corev1.SecretProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: secretAnnotation(binding, mpt)},
					},
				}},
			},
		},
	}
	if binding.Spec.Type != "" {
		volume.Projected.Sources = append(volume.Projected.Sources, downwardAPIProjection("type", typeAnnotation(binding, mpt)))
	}
	if binding.Spec.Provider != "" {
		volume.Projected.Sources = append(volume.Projected.Sources, downwardAPIProjection("provider", providerAnnotation(binding, mpt)))
	}
	mpt.volumes = append(mpt.volumes, volume)
	sort.SliceStable(mpt.volumes, func(i, j int) bool {
		return projectedFirstByName(mpt.volumes[i].Name, mpt.volumes[j].Name)
	})
}

func downwardAPIProjection(file, annotation string) corev1.VolumeProjection {
	return corev1.VolumeProjection{
		DownwardAPI: &corev1.DownwardAPIProjection{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     file,
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationFieldPath(annotation)},
			}},
		},
	}
}

// projectedFirstByName is the runtime's order for volumes and mounts: projected entries after all
// others and among themselves by name; the others keep their order.
func projectedFirstByName(a, b string) bool {
	ap := strings.HasPrefix(a, VolumePrefix)
	bp := strings.HasPrefix(b, VolumePrefix)
	if ap && bp {
		return a < b
	}
	if bp {
		return !ap
	}
	return false
}

func unprojectVolume(binding *Binding, mpt *metaPodTemplate) {
	volumes := []corev1.Volume{}
	for _, v := range mpt.volumes {
		if v.Name != volumeName(binding) {
			volumes = append(volumes, v)
		}
	}
	mpt.volumes = volumes
}

func projectContainer(binding *Binding, mpt *metaPodTemplate, mc *metaContainer) {
	if !isContainerBindable(binding, mc) {
		return
	}
	projectVolumeMount(binding, mc)
	projectEnv(binding, mpt, mc)
}

func unprojectContainer(binding *Binding, mpt *metaPodTemplate, mc *metaContainer) {
	mounts := []corev1.VolumeMount{}
	for _, m := range mc.volumeMounts {
		if m.Name != volumeName(binding) {
			mounts = append(mounts, m)
		}
	}
	mc.volumeMounts = mounts
	unprojectEnv(binding, mpt, mc)
}

func projectVolumeMount(binding *Binding, mc *metaContainer) {
	mc.volumeMounts = append(mc.volumeMounts, corev1.VolumeMount{
		Name:      volumeName(binding),
		ReadOnly:  true,
		MountPath: path.Join(serviceBindingRoot(mc), binding.Spec.Name),
	})
	sort.SliceStable(mc.volumeMounts, func(i, j int) bool {
		return projectedFirstByName(mc.volumeMounts[i].Name, mc.volumeMounts[j].Name)
	})
}

func projectEnv(binding *Binding, mpt *metaPodTemplate, mc *metaContainer) {
	for _, e := range binding.Spec.Env {
		if e.Key == "type" && binding.Spec.Type != "" {
			mc.env = append(mc.env, fieldRefEnv(e.Name, typeAnnotation(binding, mpt)))
			continue
		}
		if e.Key == "provider" && binding.Spec.Provider != "" {
			mc.env = append(mc.env, fieldRefEnv(e.Name, providerAnnotation(binding, mpt)))
			continue
		}
		mc.env = append(mc.env, corev1.EnvVar{
			Name: e.Name,
			ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: secretAnnotation(binding, mpt)},
					Key:                  e.Key,
				},
			},
		})
	}
	// projected entries after all others and among themselves by name
	secrets := knownProjectedSecrets(mpt)
	sort.SliceStable(mc.env, func(i, j int) bool {
		ip := isProjectedEnv(mc.env[i], secrets)
		jp := isProjectedEnv(mc.env[j], secrets)
		if ip && jp {
			return mc.env[i].Name < mc.env[j].Name
		}
		if jp {
			return !ip
		}
		return false
	})
}

func fieldRefEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{
		Name: name,
		ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationFieldPath(annotation)},
		},
	}
}

func unprojectEnv(binding *Binding, mpt *metaPodTemplate, mc *metaContainer) {
	env := []corev1.EnvVar{}
	// an unresolved annotation leaves secret empty, and then entries reading a secret named ""
	// go too, as in the runtime
	secret := mpt.templateAnnotations[secretAnnotationName(binding)]
	typeFieldPath := annotationFieldPath(typeAnnotationName(binding))
	providerFieldPath := annotationFieldPath(providerAnnotationName(binding))
	for _, e := range mc.env {
		// SERVICE_BINDING_ROOT stays: something else may depend on it
		remove := false
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret {
			remove = true
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			(e.ValueFrom.FieldRef.FieldPath == typeFieldPath || e.ValueFrom.FieldRef.FieldPath == providerFieldPath) {
			remove = true
		}
		if !remove {
			env = append(env, e)
		}
	}
	mc.env = env
}

func isContainerBindable(binding *Binding, mc *metaContainer) bool {
	if len(binding.Spec.Workload.Containers) == 0 || mc.name == nil {
		return true
	}
	for _, name := range binding.Spec.Workload.Containers {
		if name == *mc.name {
			return true
		}
	}
	return false
}

// serviceBindingRoot is the container's own SERVICE_BINDING_ROOT, appended with the default when
// missing.
func serviceBindingRoot(mc *metaContainer) string {
	for _, e := range mc.env {
		if e.Name == ServiceBindingRootEnv {
			return e.Value
		}
	}
	mc.env = append(mc.env, corev1.EnvVar{Name: ServiceBindingRootEnv, Value: DefaultServiceBindingRoot})
	return DefaultServiceBindingRoot
}

func isProjectedEnv(e corev1.EnvVar, secrets map[string]bool) bool {
	if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && secrets[e.ValueFrom.SecretKeyRef.Name] {
		return true
	}
	if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.annotations['"+ProjectorGroup) {
		return true
	}
	return false
}

// knownProjectedSecrets are the secrets of every binding projected into the template, so an
// entry of the user's that reads one of them counts as projected too, as in the runtime.
func knownProjectedSecrets(mpt *metaPodTemplate) map[string]bool {
	secrets := map[string]bool{}
	for k, v := range mpt.templateAnnotations {
		if strings.HasPrefix(k, SecretAnnotationPrefix) {
			secrets[v] = true
		}
	}
	return secrets
}

func annotationFieldPath(annotation string) string {
	return fmt.Sprintf("metadata.annotations['%s']", annotation)
}

func secretAnnotation(binding *Binding, mpt *metaPodTemplate) string {
	secret := binding.SecretName()
	if secret == "" {
		return ""
	}
	mpt.templateAnnotations[secretAnnotationName(binding)] = secret
	return secret
}

func typeAnnotation(binding *Binding, mpt *metaPodTemplate) string {
	key := typeAnnotationName(binding)
	mpt.templateAnnotations[key] = binding.Spec.Type
	return key
}

func providerAnnotation(binding *Binding, mpt *metaPodTemplate) string {
	key := providerAnnotationName(binding)
	mpt.templateAnnotations[key] = binding.Spec.Provider
	return key
}

func volumeName(binding *Binding) string       { return VolumePrefix + string(binding.UID) }
func secretAnnotationName(b *Binding) string   { return SecretAnnotationPrefix + string(b.UID) }
func typeAnnotationName(b *Binding) string     { return TypeAnnotationPrefix + string(b.UID) }
func providerAnnotationName(b *Binding) string { return ProviderAnnotationPrefix + string(b.UID) }
func mappingAnnotationName(b *Binding) string  { return MappingAnnotationPrefix + string(b.UID) }
