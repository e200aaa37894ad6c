// The ServiceBinding condition rules the runtime inherits from reconciler.io/runtime's living
// condition set: Ready summarises ServiceAvailable and WorkloadProjected, conditions stay sorted
// by type, and a condition's lastTransitionTime moves only when the condition changes.

package servicebinding

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var conditionDependents = []string{ConditionServiceAvailable, ConditionWorkloadProjected}

// conditionManager edits one status's conditions at one instant.
type conditionManager struct {
	status *BindingStatus
	now    time.Time
}

func manageConditions(status *BindingStatus, now time.Time) conditionManager {
	return conditionManager{status: status, now: now}
}

func (m conditionManager) get(t string) *metav1.Condition {
	for i := range m.status.Conditions {
		if m.status.Conditions[i].Type == t {
			c := m.status.Conditions[i]
			return &c
		}
	}
	return nil
}

func (m conditionManager) set(next metav1.Condition) {
	var conditions []metav1.Condition
	for _, c := range m.status.Conditions {
		if c.Type != next.Type {
			conditions = append(conditions, c)
			continue
		}
		next.LastTransitionTime = c.LastTransitionTime
		if reflect.DeepEqual(&next, &c) {
			return
		}
	}
	next.LastTransitionTime = metav1.NewTime(m.now).Rfc3339Copy()
	conditions = append(conditions, next)
	sort.Slice(conditions, func(i, j int) bool { return conditions[i].Type < conditions[j].Type })
	m.status.Conditions = conditions
}

func (m conditionManager) markTrue(t, reason, format string, a ...interface{}) {
	m.set(metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: fmt.Sprintf(format, a...)})
	for _, d := range conditionDependents {
		if !isStatus(m.get(d), metav1.ConditionTrue) {
			return
		}
	}
	m.set(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonServiceBound})
}

func (m conditionManager) markUnknown(t, reason, format string, a ...interface{}) {
	m.set(metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: fmt.Sprintf(format, a...)})
	isDependent := false
	for _, d := range conditionDependents {
		if isStatus(m.get(d), metav1.ConditionFalse) {
			if !isStatus(m.get(ConditionReady), metav1.ConditionFalse) {
				m.markFalse(ConditionReady, reason, format, a...)
			}
			return
		}
		if d == t {
			isDependent = true
		}
	}
	if isDependent {
		m.set(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionUnknown, Reason: reason, Message: fmt.Sprintf(format, a...)})
	}
}

func (m conditionManager) markFalse(t, reason, format string, a ...interface{}) {
	types := []string{t}
	for _, d := range conditionDependents {
		if d == t {
			types = append(types, ConditionReady)
		}
	}
	for _, t := range types {
		m.set(metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, a...)})
	}
}

// initialize is ServiceBindingStatus.InitializeConditions, run at the start of every reconcile:
// Ready appears if missing, and both dependents are reset to Unknown "Initializing".
func (m conditionManager) initialize() {
	ready := m.get(ConditionReady)
	if ready == nil {
		ready = &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionUnknown, Reason: "Initializing"}
		m.set(*ready)
	}
	status := metav1.ConditionUnknown
	if ready.Status == metav1.ConditionTrue {
		status = metav1.ConditionTrue
	}
	for _, d := range conditionDependents {
		if m.get(d) == nil {
			m.set(metav1.Condition{Type: d, Status: status, Reason: "Initializing"})
		}
	}
	m.markUnknown(ConditionServiceAvailable, "Initializing", "")
	m.markUnknown(ConditionWorkloadProjected, "Initializing", "")
}

func isStatus(c *metav1.Condition, s metav1.ConditionStatus) bool {
	return c != nil && c.Status == s
}

// syncLastTransitionTime keeps the stored time of every condition that ended the reconcile as it
// started, so an unchanged status is not written again.
func syncLastTransitionTime(proposed, original []metav1.Condition) {
	for _, o := range original {
		for i := range proposed {
			p := &proposed[i]
			if o.Type == p.Type {
				if o.Status == p.Status && o.Reason == p.Reason && o.Message == p.Message && o.ObservedGeneration == p.ObservedGeneration {
					p.LastTransitionTime = o.LastTransitionTime
				}
				break
			}
		}
	}
}
