// Package nodeagent does a kubelet's part for a control plane without a container runtime: it
// registers Ready nodes, reports each pod scheduled to them Running and Ready (with a start
// time and container statuses the workload controllers read), refuses to start a pod whose
// secret or config map is missing (a FailedMount event and the pod stays Pending, as a kubelet
// leaves it), and confirms the deletion of terminating pods.
//
// It is the harness's own rather than kwok's controllers because kwok's module pins its own
// k8s.io release, and the harness keeps every k8s.io module at one release; what a scenario
// reads of a pod (uid, start time, phase, readiness, the template it was made from) is all
// here.
package nodeagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// NodeName is the name of the node agent's i-th node (from 1).
func NodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// Agent runs the nodes.
type Agent struct {
	client kubernetes.Interface
	mu     sync.Mutex
	nodes  map[string]int
}

// Run registers `nodes` nodes and serves their pods until ctx ends. Nodes added later (a
// scenario's "a fourth node joins") are served once they carry the label NodeLabel.
func Run(ctx context.Context, client kubernetes.Interface, nodes int) error {
	a := &Agent{client: client, nodes: map[string]int{}}
	for i := 1; i <= nodes; i++ {
		if err := a.Register(ctx, NodeName(i)); err != nil {
			return err
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	nodeInformer := factory.Core().V1().Nodes().Informer()
	if _, err := nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			node := obj.(*corev1.Node)
			if node.Labels[NodeLabel] == "true" {
				go func() {
					if err := a.Register(ctx, node.Name); err != nil {
						klog.Errorf("registering %s: %v", node.Name, err)
					}
				}()
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		namespace, name, _ := cache.SplitMetaNamespaceKey(key)
		pod, err := pods.Lister().Pods(namespace).Get(name)
		if err == nil {
			err = a.sync(ctx, pod)
		} else if apierrors.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			klog.Infof("pod %s: %v (retrying)", key, err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// NodeLabel marks a node the agent runs: nodes it registers carry it, and a node created by
// somebody else with it is taken over.
const NodeLabel = "restage-gate.test/node-agent"

// Register creates (or takes over) a node and makes it Ready and schedulable.
func (a *Agent) Register(ctx context.Context, name string) error {
	a.mu.Lock()
	_, known := a.nodes[name]
	if !known {
		a.nodes[name] = len(a.nodes) + 1
	}
	a.mu.Unlock()
	if known {
		return nil
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", NodeLabel: "true"},
	}}
	if _, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for attempt := 0; ; attempt++ {
		current, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// The API server taints a new node not-ready until something reports it Ready; the
		// node lifecycle controller that would lift the taint is not run here.
		current.Spec.Taints = nil
		if _, err = a.client.CoreV1().Nodes().Update(ctx, current, metav1.UpdateOptions{}); err == nil {
			break
		} else if !apierrors.IsConflict(err) || attempt > 10 {
			return err
		}
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("16"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	for attempt := 0; ; attempt++ {
		current, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "the harness's node agent runs this node", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"},
		}
		if _, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{}); err == nil {
			return nil
		} else if !apierrors.IsConflict(err) || attempt > 10 {
			return err
		}
	}
}

func (a *Agent) serves(node string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.nodes[node]
	return i, ok
}

// sync does for one pod what a kubelet would do next.
func (a *Agent) sync(ctx context.Context, pod *corev1.Pod) error {
	nodeIndex, ok := a.serves(pod.Spec.NodeName)
	if !ok {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		zero := int64(0)
		err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if pod.Status.Phase == corev1.PodRunning {
		return nil
	}
	if missing, err := a.missingVolumeSource(ctx, pod); err != nil {
		return err
	} else if missing != "" {
		a.failedMount(ctx, pod, missing)
		return fmt.Errorf("waiting for %s", missing)
	}
	now := metav1.Now()
	status := pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	status.HostIP = "127.0.0.1"
	status.PodIP = fmt.Sprintf("10.244.%d.%d", nodeIndex, 2+int(pod.UID[0])%250)
	status.PodIPs = []corev1.PodIP{{IP: status.PodIP}}
	status.StartTime = &now
	status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		started := true
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: &started,
			ContainerID: fmt.Sprintf("node-agent://%s/%s", pod.UID, c.Name),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	_, err := a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// missingVolumeSource names the first secret or config map the pod mounts that does not exist
// and is not optional, as a kubelet would fail to mount it.
func (a *Agent) missingVolumeSource(ctx context.Context, pod *corev1.Pod) (string, error) {
	check := func(kind, name string, optional *bool) (string, error) {
		if optional != nil && *optional {
			return "", nil
		}
		var err error
		if kind == "secret" {
			_, err = a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		} else {
			_, err = a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s %q", kind, name), nil
		}
		return "", err
	}
	for _, v := range pod.Spec.Volumes {
		var missing string
		var err error
		switch {
		case v.Secret != nil:
			missing, err = check("secret", v.Secret.SecretName, v.Secret.Optional)
		case v.ConfigMap != nil:
			missing, err = check("configmap", v.ConfigMap.Name, v.ConfigMap.Optional)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					missing, err = check("secret", s.Secret.Name, s.Secret.Optional)
				} else if s.ConfigMap != nil {
					missing, err = check("configmap", s.ConfigMap.Name, s.ConfigMap.Optional)
				}
				if missing != "" || err != nil {
					break
				}
			}
		}
		if missing != "" || err != nil {
			return missing, err
		}
	}
	return "", nil
}

// failedMount records the kubelet's event for a volume it cannot mount.
func (a *Agent) failedMount(ctx context.Context, pod *corev1.Pod, missing string) {
	now := metav1.NewTime(time.Now())
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1",
		},
		Reason:         "FailedMount",
		Message:        fmt.Sprintf("MountVolume.SetUp failed: %s not found", missing),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := a.client.CoreV1().Events(pod.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
		klog.Errorf("recording FailedMount for %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}
