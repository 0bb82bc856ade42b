{{/* Names and labels, as helm create writes them. */}}
{{- define "myriarch-collector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "myriarch-collector.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "myriarch-collector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "myriarch-collector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "myriarch-collector.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "myriarch-collector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ ternary "collector-container-mode" "collector" .Values.containerMode.enabled }}
{{- end }}

{{- define "myriarch-collector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "myriarch-collector.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag of one entry of .Values.images. */}}
{{/* An image reference; an empty tag is the chart's appVersion (pass dict "image" … "root" $). */}}
{{- define "myriarch-collector.image" -}}
{{- $tag := toString (default "" .image.tag) }}
{{- printf "%s:%s" .image.repository (ternary .root.Chart.AppVersion $tag (eq $tag "")) }}
{{- end }}

{{/*
A duration of updater.yaml ("30s", "2m", "1m30s", "500ms": whole numbers with a unit) in
milliseconds. The schema admits only this form, so the chart and the updater read the same value.
*/}}
{{- define "myriarch-collector.durationMs" -}}
{{- $d := toString . }}
{{- if not (regexMatch "^([0-9]+(ms|h|m|s))+$" $d) }}
{{- fail (printf "myriarch-collector: %q is not a duration: write whole numbers with a unit, e.g. 30s, 2m, 1m30s, 500ms" $d) }}
{{- end }}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 }}
{{- $total := 0 }}
{{- range $part := regexFindAll "[0-9]+(ms|h|m|s)" $d -1 }}
{{- $n := regexFind "^[0-9]+" $part | atoi }}
{{- $unit := regexReplaceAll "^[0-9]+" $part "" }}
{{- $total = add $total (mul $n (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
terminationGracePeriodSeconds in container mode (spec "Operational limits"): a shutdown that
arrives during a swap may first finish the install's critical section (stop, swap, health check of
up to healthTimeout, possibly a rollback with its own stop and health check) and then stop the
child, so 2 x stopTimeout + 2 x healthTimeout + a margin, rounded up, and never below 360 s.
*/}}
{{- define "myriarch-collector.gracePeriodSeconds" -}}
{{- $cm := .Values.containerMode }}
{{- $stop := include "myriarch-collector.durationMs" $cm.stopTimeout | atoi }}
{{- $health := include "myriarch-collector.durationMs" $cm.healthTimeout | atoi }}
{{- $margin := include "myriarch-collector.durationMs" $cm.graceMargin | atoi }}
{{- $ms := add (mul 2 $stop) (mul 2 $health) $margin }}
{{- $s := div (add $ms 999) 1000 }}
{{- max $s 360 }}
{{- end }}

{{/*
Signature verification is off only when containerMode.requireSignature is the boolean false. A
value removed with null, or any other spelling, keeps it on.
*/}}
{{- define "myriarch-collector.requireSignature" -}}
{{- $cm := .Values.containerMode }}
{{- if and (hasKey $cm "requireSignature") (kindIs "bool" $cm.requireSignature) (not $cm.requireSignature) }}false{{ else }}true{{ end }}
{{- end }}

{{- define "myriarch-collector.trustedRootConfigMap" -}}
{{- if .Values.containerMode.trustedRoot.configMap }}
{{- .Values.containerMode.trustedRoot.configMap }}
{{- else }}
{{- printf "%s-trusted-root" (include "myriarch-collector.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Render-time checks of container mode: each failure says what is wrong and what to do, so that a
mistake stops `helm install` instead of becoming a crash-looping pod.
*/}}
{{- define "myriarch-collector.checkContainerMode" -}}
{{- $cm := .Values.containerMode }}
{{- if ne .Values.mode "statefulset" }}
{{- fail (printf "myriarch-collector: containerMode.enabled needs mode: statefulset, not %q. Every replica keeps its collector binaries on a ReadWriteOnce claim of its own, which only a StatefulSet's volumeClaimTemplates give: a Deployment's replicas would share one claim, and a DaemonSet cannot have claim templates." .Values.mode) }}
{{- end }}
{{- if not .Values.server.endpoint }}
{{- fail "myriarch-collector: server.endpoint is required in container mode: the updater and the supervisor connect to the OpAMP server (e.g. wss://myriarchd.myriarch.svc:4320/v1/opamp)" }}
{{- end }}
{{- if not (regexMatch "^wss?://" .Values.server.endpoint) }}
{{- fail (printf "myriarch-collector: server.endpoint %q must be a ws:// or wss:// URL" .Values.server.endpoint) }}
{{- end }}
{{- if and (hasPrefix "ws://" .Values.server.endpoint) (not .Values.server.allowInsecureTransport) (not (regexMatch "^ws://(127\\.[0-9.]+|localhost|\\[::1\\])(:[0-9]+)?(/|$)" .Values.server.endpoint)) }}
{{- fail (printf "myriarch-collector: server.endpoint %q is plain ws:// to a host that is not loopback: use wss://, or set server.allowInsecureTransport=true inside a trusted network" .Values.server.endpoint) }}
{{- end }}
{{- if and (eq (toString $cm.stopSignal) "INT") (lt (include "myriarch-collector.durationMs" $cm.stopTimeout | atoi) 11000) }}
{{- fail (printf "myriarch-collector: containerMode.stopTimeout %q is too short for stopSignal INT: on INT the upstream supervisor gives its collector up to 10 s before it exits, so the updater's KILL must come later. Set containerMode.stopTimeout to 11s or more (the default is 30s)." (toString $cm.stopTimeout)) }}
{{- end }}
{{- if eq (include "myriarch-collector.requireSignature" .) "true" }}
{{- if and $cm.trustedRoot.json $cm.trustedRoot.configMap }}
{{- fail "myriarch-collector: set only one of containerMode.trustedRoot.json and containerMode.trustedRoot.configMap" }}
{{- end }}
{{- if not (or $cm.trustedRoot.json $cm.trustedRoot.configMap) }}
{{- fail "myriarch-collector: container mode verifies offered collector releases offline against a Sigstore trusted root, and none was given. Set containerMode.trustedRoot.json (e.g. --set-file containerMode.trustedRoot.json=trusted_root.json) or containerMode.trustedRoot.configMap (an existing ConfigMap with the key trusted_root.json). Only to switch verification off on purpose, set containerMode.requireSignature=false." }}
{{- end }}
{{- if eq (empty $cm.signerIdentity.subject) (empty $cm.signerIdentity.subjectRegexp) }}
{{- fail "myriarch-collector: with signature verification on, set exactly one of containerMode.signerIdentity.subject (the exact certificate identity of the release workflow) and containerMode.signerIdentity.subjectRegexp (an anchored ^…$ expression)" }}
{{- end }}
{{- if not $cm.signerIdentity.issuer }}
{{- fail "myriarch-collector: containerMode.signerIdentity.issuer must not be empty while signature verification is on" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The pod's securityContext (Pod Security "restricted"): the standard profile fills in the IDs from
podSecurityContext (a null value leaves that field out); the openshift profile leaves all three
to the SCC, which assigns them from the namespace's annotations.
*/}}
{{- define "myriarch-collector.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- if eq .Values.containerMode.securityProfile "standard" }}
{{- $p := .Values.podSecurityContext }}
{{- range $key := list "runAsUser" "runAsGroup" "fsGroup" }}
{{- if and (hasKey $p $key) (not (kindIs "invalid" (get $p $key))) }}
{{ $key }}: {{ get $p $key | int64 }}
{{- end }}
{{- end }}
{{- if and (hasKey $p "fsGroup") (not (kindIs "invalid" $p.fsGroup)) }}
# Large binaries volumes are not walked again on every start once their group is right.
fsGroupChangePolicy: OnRootMismatch
{{- end }}
{{- end }}
{{- end }}

{{/* Every container, init containers included (Pod Security "restricted"). */}}
{{- define "myriarch-collector.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The collector's base configuration: the chart's defaults with .Values.config merged over them. */}}
{{- define "myriarch-collector.collectorConfig" -}}
{{- $hcPort := .Values.collectorHealthPort | int }}
{{- $base := dict
  "extensions" (dict "health_check" (dict "endpoint" (printf "0.0.0.0:%d" $hcPort)))
  "receivers" (dict "otlp" (dict "protocols" (dict
      "grpc" (dict "endpoint" (printf "0.0.0.0:%d" (index .Values.ports "otlp" "containerPort" | int)))
      "http" (dict "endpoint" (printf "0.0.0.0:%d" (index .Values.ports "otlp-http" "containerPort" | int))))))
  "exporters" (dict "debug" (dict))
  "service" (dict
      "extensions" (list "health_check")
      "pipelines" (dict
        "traces" (dict "receivers" (list "otlp") "exporters" (list "debug"))
        "metrics" (dict "receivers" (list "otlp") "exporters" (list "debug"))
        "logs" (dict "receivers" (list "otlp") "exporters" (list "debug")))) }}
{{- $cfg := mustMergeOverwrite $base (deepCopy .Values.config) }}
{{- /* The health_check extension stays on whatever the merge did: the updater's health check
       and the probes read it, and the supervisor no longer adds it. */}}
{{- $svc := $cfg.service | default dict }}
{{- $exts := $svc.extensions | default list }}
{{- if not (has "health_check" $exts) }}
{{- $_ := set $svc "extensions" (append $exts "health_check") }}
{{- end }}
{{- if not (hasKey (($cfg.extensions | default dict)) "health_check") }}
{{- $_ := set $cfg "extensions" (merge ($cfg.extensions | default dict) (dict "health_check" (dict "endpoint" (printf "0.0.0.0:%d" $hcPort)))) }}
{{- end }}
{{- $_ := set $cfg "service" $svc }}
{{- toYaml $cfg }}
{{- end }}
