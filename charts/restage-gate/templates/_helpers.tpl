{{- /*
restage-gate's chart helpers: each ClusterAdmissionPolicy is written by one helper, so the
policy, the guard and the monitor share the module, rules, selectors and settings and differ
only in mode; the window job's namespace and identity are named here once.
*/ -}}

{{- /* The webhook rules: one per API group, UPDATE only (written by `make kinds`). */ -}}
{{- define "restage-gate.rules" -}}
rules:
  - apiGroups: ["apps"]
    apiVersions: ["v1"]
    resources: ["statefulsets", "daemonsets", "deployments"]
    operations: ["UPDATE"]
  - apiGroups: ["argoproj.io"]
    apiVersions: ["v1alpha1"]
    resources: ["rollouts"]
    operations: ["UPDATE"]
{{- end }}

{{- /* The namespaces every policy sees: all but the cluster's own and Kubewarden's. */ -}}
{{- define "restage-gate.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ concat .Values.excludedNamespaces (list .Values.kubewardenNamespace) | toJson }}
    {{- with .Values.namespaceSelectorExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{- /*
A ClusterAdmissionPolicy of the module: dict root (the chart's context), name, kubewardenMode
(protect or monitor), mutating and mode (the module's). Its settings are .Values.settings with
`mode` set; nothing else differs between the policies.
*/ -}}
{{- define "restage-gate.policy" -}}
{{- $values := .root.Values -}}
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: {{ .name }}
spec:
  module: {{ $values.module }}
  mode: {{ .kubewardenMode }}
  mutating: {{ .mutating }}
  failurePolicy: Ignore
  backgroundAudit: false
  {{- include "restage-gate.rules" .root | nindent 2 }}
  {{- include "restage-gate.namespaceSelector" .root | nindent 2 }}
  {{- with $values.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  settings:
    {{- merge (dict "mode" .mode) $values.settings | toYaml | nindent 4 }}
{{- end }}

{{- /* "true" when the window job is rendered: the defer setup with maintenance windows. */ -}}
{{- define "restage-gate.windowRelease" -}}
{{- if and (eq .Values.setup "defer") .Values.settings.maintenanceWindows }}true{{ end }}
{{- end }}

{{- /* The window job's name: its ServiceAccount, roles, CronJob and admission policy. */ -}}
{{- define "restage-gate.jobName" -}}
restage-gate-window-release
{{- end }}

{{- /* The user name the API server gives the job's ServiceAccount. */ -}}
{{- define "restage-gate.jobUser" -}}
system:serviceaccount:{{ .Values.kubewardenNamespace }}:{{ include "restage-gate.jobName" . }}
{{- end }}

{{- /* The kubectl image: the cluster's own version unless set. */ -}}
{{- define "restage-gate.kubectlImage" -}}
{{- if .Values.windowRelease.image -}}
{{ .Values.windowRelease.image }}
{{- else -}}
{{- $v := semver .Capabilities.KubeVersion.Version -}}
registry.k8s.io/kubectl:v{{ $v.Major }}.{{ $v.Minor }}.{{ $v.Patch }}
{{- end }}
{{- end }}
