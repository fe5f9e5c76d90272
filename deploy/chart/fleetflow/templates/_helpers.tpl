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
{{- if not (has .Values.mode (list "all-in-one" "parts")) -}}
{{- fail (printf "mode: %q: want all-in-one or parts" (toString .Values.mode)) -}}
{{- end -}}
{{- if eq .Values.mode "parts" -}}
{{- if not .Values.nats.url -}}
{{- fail "mode=parts needs nats.url: the parts are pods of their own, and the embedded NATS server lives in one pod" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range .Values.clusters -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString .name)) -}}
{{- fail (printf "clusters: name %q: want a DNS label (lowercase letters, digits, '-')" (toString .name)) -}}
{{- end -}}
{{- if gt (len .name) 50 -}}
{{- fail (printf "clusters: name %q: at most 50 characters here, to name its Deployments" .name) -}}
{{- end -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "clusters: %s given twice" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- end -}}
{{- end -}}
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
{{- $durations := dict "parts.clusterProducer.heartbeat" .Values.parts.clusterProducer.heartbeat "placer.heartbeatTimeout" .Values.placer.heartbeatTimeout "placer.pendingTimeout" .Values.placer.pendingTimeout "placer.reservationTTL" .Values.placer.reservationTTL "placer.failedApplyRetry" .Values.placer.failedApplyRetry "placer.statePruneGrace" .Values.placer.statePruneGrace "placer.leaseTTL" .Values.placer.leaseTTL -}}
{{- range $name := keys $durations | sortAlpha -}}
{{- $value := toString (get $durations $name) -}}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$" $value) -}}
{{- fail (printf "%s: %q is no duration: give a number and a unit, e.g. 5m or 90s" $name $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that pick one part's pods in mode=parts; root is the chart's context. */}}
{{- define "fleetflow.partSelectorLabels" -}}
{{ include "fleetflow.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- with .cluster }}
fleetflow.io/cluster: {{ .name }}
{{- end }}
{{- end -}}

{{/* A part's ServiceAccount in mode=parts: producer, status or nats-only. */}}
{{- define "fleetflow.partServiceAccountName" -}}
{{- printf "%s-%s" (include "fleetflow.fullname" .root) .account -}}
{{- end -}}

{{/*
The NATS flags every part gives, for the user of seed (its key in nats.usersSecret, without .nk).
*/}}
{{- define "fleetflow.partNATSArgs" -}}
{{- $v := .root.Values -}}
- --nats-url={{ $v.nats.url }}
{{- if $v.nats.credsSecret }}
- --nats-creds=/etc/fleetflow/nats-creds/creds
{{- end }}
{{- if $v.nats.usersSecret }}
- --nats-nkey=/etc/fleetflow/nats-user/{{ .seed }}.nk
{{- end }}
{{- if $v.nats.tlsSecret }}
- --nats-tls-ca=/etc/fleetflow/nats-tls/ca.crt
{{- if $v.nats.tlsClientCert }}
- --nats-tls-cert=/etc/fleetflow/nats-tls/tls.crt
- --nats-tls-key=/etc/fleetflow/nats-tls/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{/*
One part's Deployment in mode=parts, and its PodDisruptionBudget when it has more than one replica. Takes a
dict:
  root        the chart's context
  name        the Deployment's name after the release's full name (placer, applier-east)
  component   the part (producer, placer, status, cluster-producer, applier, ui)
  account     its ServiceAccount's suffix (see fleetflow.partServiceAccountName)
  seed        its NATS user: the key <seed>.nk of nats.usersSecret is all it mounts of it
  cluster     the workload cluster (an item of clusters) whose kubeconfig it mounts, or nil
  values      its entry under parts (replicas, resources)
  args        its arguments: the command, then its own flags (the NATS and health flags are added)
  health      whether it serves /healthz, /readyz and /metrics on health.port
  port        a port of its own to serve: dict with name and port, or nil
*/}}
{{- define "fleetflow.part" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $fullname := printf "%s-%s" (include "fleetflow.fullname" $root) .name -}}
{{- $replicas := int .values.replicas -}}
{{- $api := has .account (list "producer" "status") }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "fleetflow.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  replicas: {{ $replicas }}
  selector:
    matchLabels:
      {{- include "fleetflow.partSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "fleetflow.partSelectorLabels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $v.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "fleetflow.partServiceAccountName" . }}
      {{- if not $api }}
      # No right on the control plane: its token stays out of the pod.
      automountServiceAccountToken: false
      {{- end }}
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      containers:
        - name: fleetflow
          image: "{{ $v.image.repository }}:{{ default $root.Chart.AppVersion $v.image.tag }}"
          imagePullPolicy: {{ $v.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
            {{- include "fleetflow.partNATSArgs" . | nindent 12 }}
            - --log-level={{ $v.logLevel }}
            - --log-format={{ $v.logFormat }}
            {{- if .health }}
            - --health-address=:{{ $v.health.port }}
            {{- end }}
            {{- if ne .component "ui" }}
            # Every part checks the streams it finds against these, so all give the same.
            - --history={{ $v.history }}
            - --stream-replicas={{ $v.nats.streamReplicas }}
            # The record of user ResourceInterface evaluations in progress, which keeps an RI that stopped the
            # process from stopping it again at its restart.
            - --data-dir=/var/lib/fleetflow/nats
            {{- end }}
          ports:
            {{- if .health }}
            - name: health
              containerPort: {{ $v.health.port }}
              protocol: TCP
            {{- end }}
            {{- with .port }}
            - name: {{ .name }}
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
          {{- if .health }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            {{- toYaml $v.health.livenessProbe | nindent 12 }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            {{- toYaml $v.health.readinessProbe | nindent 12 }}
          {{- else if .port }}
          livenessProbe:
            tcpSocket:
              port: {{ .port.name }}
            {{- toYaml $v.health.livenessProbe | nindent 12 }}
          readinessProbe:
            tcpSocket:
              port: {{ .port.name }}
            {{- toYaml $v.health.readinessProbe | nindent 12 }}
          {{- end }}
          env:
            # The Go runtime collects harder as the heap nears the container's limit instead of being killed.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  containerName: fleetflow
                  resource: limits.memory
          resources:
            {{- toYaml (default $v.resources .values.resources) | nindent 12 }}
          securityContext:
            {{- toYaml $v.securityContext | nindent 12 }}
          volumeMounts:
            - name: data
              mountPath: /var/lib/fleetflow
            {{- if $v.nats.credsSecret }}
            - name: nats-creds
              mountPath: /etc/fleetflow/nats-creds
              readOnly: true
            {{- end }}
            {{- if $v.nats.usersSecret }}
            - name: nats-user
              mountPath: /etc/fleetflow/nats-user
              readOnly: true
            {{- end }}
            {{- if $v.nats.tlsSecret }}
            - name: nats-tls
              mountPath: /etc/fleetflow/nats-tls
              readOnly: true
            {{- end }}
            {{- if .cluster }}
            - name: kubeconfig
              mountPath: /etc/fleetflow/kubeconfig
              readOnly: true
            {{- end }}
            {{- if and (eq .component "ui") $v.ui.tokenSecret }}
            - name: ui-token
              mountPath: /etc/fleetflow/ui-token
              readOnly: true
            {{- end }}
      volumes:
        - name: data
          emptyDir:
            sizeLimit: 16Mi
        {{- with $v.nats.credsSecret }}
        - name: nats-creds
          secret:
            secretName: {{ . }}
        {{- end }}
        {{- with $v.nats.usersSecret }}
        # Only this part's user: the other parts' seeds stay out of the pod.
        - name: nats-user
          secret:
            secretName: {{ . }}
            items:
              - key: {{ $.seed }}.nk
                path: {{ $.seed }}.nk
            defaultMode: 0440 # the pod's fsGroup reads it
        {{- end }}
        {{- with $v.nats.tlsSecret }}
        - name: nats-tls
          secret:
            secretName: {{ . }}
        {{- end }}
        {{- with .cluster }}
        # Only this cluster's kubeconfig.
        - name: kubeconfig
          secret:
            secretName: {{ default (printf "cluster-%s-kubeconfig" .name) .kubeconfigSecret }}
            items:
              - key: {{ default "kubeconfig" .kubeconfigKey }}
                path: kubeconfig
            defaultMode: 0440
        {{- end }}
        {{- if and (eq .component "ui") $v.ui.tokenSecret }}
        - name: ui-token
          secret:
            secretName: {{ $v.ui.tokenSecret }}
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $v.affinity }}
      affinity:
        {{- toYaml $v.affinity | nindent 8 }}
      {{- else if gt $replicas 1 }}
      # Replicas on different nodes: a node's loss takes one of them.
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "fleetflow.partSelectorLabels" . | nindent 20 }}
      {{- end }}
{{- if gt $replicas 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "fleetflow.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  maxUnavailable: {{ $v.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "fleetflow.partSelectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}
