{{/* The release's full name, shared by every object of the chart. */}}
{{- define "fleetflow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "fleetflow.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "fleetflow.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "fleetflow.serviceAccountName" -}}
{{- default (include "fleetflow.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* validate fails the render on values that cannot work together, naming the value. */}}
{{- define "fleetflow.validate" -}}
{{- if and (not .Values.nats.url) (gt (int .Values.replicas) 1) -}}
{{- fail "replicas > 1 needs nats.url: the embedded NATS server lives in one pod" -}}
{{- end -}}
{{- if and (not .Values.nats.url) (or .Values.nats.credsSecret .Values.nats.tlsSecret) -}}
{{- fail "nats.credsSecret and nats.tlsSecret apply to an external server: set nats.url" -}}
{{- end -}}
{{- if and .Values.nats.usersSecret .Values.nats.credsSecret -}}
{{- fail "nats.usersSecret and nats.credsSecret: give one; with usersSecret each part connects as its own user" -}}
{{- end -}}
{{- if and (not .Values.nats.url) (gt (int .Values.nats.streamReplicas) 1) -}}
{{- fail "nats.streamReplicas > 1 needs nats.url: the embedded NATS server is one node" -}}
{{- end -}}
{{- if or (lt (int .Values.nats.streamReplicas) 1) (gt (int .Values.nats.streamReplicas) 5) -}}
{{- fail "nats.streamReplicas must be 1 to 5" -}}
{{- end -}}
{{- /* A duration without a unit (failedApplyRetry: 300) renders, and fleetflow run then refuses its flag at every start. */}}
{{- $durations := dict "placer.heartbeatTimeout" .Values.placer.heartbeatTimeout "placer.pendingTimeout" .Values.placer.pendingTimeout "placer.reservationTTL" .Values.placer.reservationTTL "placer.failedApplyRetry" .Values.placer.failedApplyRetry "placer.statePruneGrace" .Values.placer.statePruneGrace "placer.leaseTTL" .Values.placer.leaseTTL -}}
{{- range $name := keys $durations | sortAlpha -}}
{{- $value := toString (get $durations $name) -}}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$" $value) -}}
{{- fail (printf "%s: %q is no duration: give a number and a unit, e.g. 5m or 90s" $name $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
