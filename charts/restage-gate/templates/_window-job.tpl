{{- /*
The window job's CronJob: dict root (the chart's context), name and resources (what its kubectl
annotates, comma-separated). One CronJob for the kinds of the built-in API groups
(window-release.yaml) and one per group of custom resources the cluster serves (written by
`make kinds`), all run by the one ServiceAccount.
*/ -}}
{{- define "restage-gate.windowJob" -}}
{{- $root := .root -}}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ .name }}
  namespace: {{ $root.Values.kubewardenNamespace }}
spec:
  # The cadence bounds how late a window acts, and a window shorter than two ticks may be
  # missed; each tick costs one admission call per held workload.
  schedule: {{ $root.Values.windowRelease.schedule | quote }}
  timeZone: Etc/UTC
  concurrencyPolicy: Forbid
  # A tick missed by more than this is skipped: the next one does the same work.
  startingDeadlineSeconds: 120
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 1
      # Ends a stuck run before the next tick.
      activeDeadlineSeconds: 240
      ttlSecondsAfterFinished: 86400
      template:
        spec:
          serviceAccountName: {{ include "restage-gate.jobName" $root }}
          restartPolicy: Never
          nodeSelector:
            kubernetes.io/os: linux
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            runAsGroup: 65532
            seccompProfile:
              type: RuntimeDefault
          containers:
            - name: annotate
              # The official kubectl image, by default at the cluster's own version: kubectl
              # supports one minor version of skew from the API server. One kubectl command,
              # given as arguments, with nothing else in the container to trust.
              image: {{ include "restage-gate.kubectlImage" $root }}
              command: ["/bin/kubectl"]
              args:
                - annotate
                - {{ .resources }}
                - --all-namespaces
                - -l
                - restage-gate.io/held=true
                - restage-gate.io/release=window
                - --overwrite
              env:
                # kubectl caches the API's discovery documents under $HOME/.kube.
                - name: HOME
                  value: /tmp
              resources:
                requests:
                  cpu: 10m
                  memory: 64Mi
                limits:
                  cpu: 500m
                  memory: 256Mi
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                runAsNonRoot: true
                capabilities:
                  drop: ["ALL"]
              volumeMounts:
                - name: tmp
                  mountPath: /tmp
          volumes:
            - name: tmp
              emptyDir:
                sizeLimit: 64Mi
{{- end }}
